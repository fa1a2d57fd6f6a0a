package pluginproto

import (
	"context"
	"encoding/json"
	"testing"
)

// A call's trace context reaches the handler's Request, over the contract
// (the Client's CallStart to the plugin's server) and in process; a proxy
// gets it in its ProxyCall.
func TestTraceContextReachesTheHandler(t *testing.T) {
	t.Parallel()
	const parent, state = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=1"
	p := New("test", "0")
	p.AddTool(Tool{Name: "trace"}, func(_ context.Context, req *Request) (*Result, error) {
		return TextResult(req.TraceParent + " " + req.TraceState), nil
	})
	c, _ := serve(t, 2, newServer(p))
	want := string(TextResult(parent + " " + state).mustEncode(t))
	for name, call := range map[string]func(*CallRequest) (json.RawMessage, error){
		"over gRPC":  func(r *CallRequest) (json.RawMessage, error) { return c.CallTool(t.Context(), r) },
		"in process": func(r *CallRequest) (json.RawMessage, error) { return p.CallTool(t.Context(), r) },
	} {
		res, err := call(&CallRequest{Tool: "trace", TraceParent: parent, TraceState: state})
		if err != nil || string(res) != want {
			t.Errorf("%s: %s %v, want %s", name, res, err, want)
		}
	}

	got := make(chan *ProxyCall, 1)
	px := New("proxy", "0")
	px.SetProxy(recordingProxy{got}, Offers{})
	if _, err := px.CallTool(t.Context(), &CallRequest{Tool: "any", TraceParent: parent, TraceState: state}); err != nil {
		t.Fatal(err)
	}
	if pc := <-got; pc.TraceParent != parent || pc.TraceState != state {
		t.Errorf("the proxy got traceparent %q and tracestate %q", pc.TraceParent, pc.TraceState)
	}
}

func (r *Result) mustEncode(t *testing.T) json.RawMessage {
	t.Helper()
	b, err := r.encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordingProxy answers every call, handing it to got.
type recordingProxy struct{ got chan<- *ProxyCall }

func (r recordingProxy) CallTool(_ context.Context, c *ProxyCall) (json.RawMessage, error) {
	r.got <- c
	return json.RawMessage(`{"content":[]}`), nil
}
func (recordingProxy) ReadResource(context.Context, string, json.RawMessage, *Input) (json.RawMessage, error) {
	return nil, ErrUnknownResource
}
func (recordingProxy) GetPrompt(context.Context, string, json.RawMessage, json.RawMessage, *Input) (json.RawMessage, error) {
	return nil, ErrUnknownPrompt
}
func (recordingProxy) Complete(context.Context, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}
func (recordingProxy) SubscribeResource(context.Context, string, bool) error { return nil }
