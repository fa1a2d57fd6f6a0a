package pluginhost_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// Of reaches a *pluginproto.Plugin's host side: its in-process call, and
// its proxy hook, which replaces what the plugin lists and serves.
func TestOfReachesThePluginsHostSide(t *testing.T) {
	t.Parallel()
	p := pluginproto.New("p", "0")
	p.AddTool(pluginproto.Tool{Name: "hi"}, func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		return pluginproto.TextResult("hello"), nil
	})
	res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "hi"})
	if err != nil || !json.Valid(res) {
		t.Fatalf("CallTool = %s, %v", res, err)
	}
	pluginhost.Of(p).SetProxy(echoProxy{})
	if err := pluginhost.Of(p).SetProxyLists(pluginhost.ProxyLists{Tools: [][]byte{[]byte(`{"name":"proxied","inputSchema":{"type":"object"}}`)}}); err != nil {
		t.Fatal(err)
	}
	if tools := p.Tools(); len(tools) != 1 || !json.Valid(tools[0]) {
		t.Fatalf("Tools() = %s, want the proxied tool alone", tools)
	}
	res, err = pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "proxied"})
	if err != nil || string(res) != `{"content":[]}` {
		t.Fatalf("proxied CallTool = %s, %v; want the proxy's answer", res, err)
	}
}

type echoProxy struct{}

func (echoProxy) CallTool(context.Context, *pluginhost.ProxyCall) (json.RawMessage, error) {
	return json.RawMessage(`{"content":[]}`), nil
}
func (echoProxy) ReadResource(context.Context, string, json.RawMessage, *pluginhost.Input) (json.RawMessage, error) {
	return nil, pluginproto.ErrUnknownResource
}
func (echoProxy) GetPrompt(context.Context, string, json.RawMessage, json.RawMessage, *pluginhost.Input) (json.RawMessage, error) {
	return nil, pluginproto.ErrUnknownPrompt
}
func (echoProxy) Complete(context.Context, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{"completion":{"values":[]}}`), nil
}
func (echoProxy) SubscribeResource(context.Context, string, bool) error { return nil }
