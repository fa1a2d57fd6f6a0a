package pluginproto

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/plughost/plughost/internal/pluginhost"
)

func (r *Result) mustEncode(t *testing.T) json.RawMessage {
	t.Helper()
	b, err := r.encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordingProxy answers every call, handing it to got.
type recordingProxy struct{ got chan<- *pluginhost.ProxyCall }

func (r recordingProxy) CallTool(_ context.Context, c *pluginhost.ProxyCall) (json.RawMessage, error) {
	r.got <- c
	return json.RawMessage(`{"content":[]}`), nil
}
func (recordingProxy) ReadResource(context.Context, string, json.RawMessage, *pluginhost.Input) (json.RawMessage, error) {
	return nil, ErrUnknownResource
}
func (recordingProxy) GetPrompt(context.Context, string, json.RawMessage, json.RawMessage, *pluginhost.Input) (json.RawMessage, error) {
	return nil, ErrUnknownPrompt
}
func (recordingProxy) Complete(context.Context, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}
func (recordingProxy) SubscribeResource(context.Context, string, bool) error { return nil }
