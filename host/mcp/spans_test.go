package mcp

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// TestRequestSpans: with Options.Tracer, each request is a server span
// named and described as the MCP conventions say, under the client's
// span when _meta carries a valid traceparent (a fresh trace when it is
// invalid), failed with the JSON-RPC error's code; the catalog finds it in
// the call's context; a stateless request names its revision and no
// session.
func TestRequestSpans(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	cat := &tracing{}
	srv := NewServer(cat, &Options{Tracer: tp.Tracer("test")})
	s := srv.OpenSession(SessionConn{Notify: nopSink{}, Peer: Peer{SessionID: "s1", Remote: "127.0.0.1:9"}})
	defer s.Close()
	ctx := context.Background()
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"tester","version":"2"}}}`), nopSink{})
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nopSink{})
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"traceparent":"00-`+traceID+`-`+parentID+`-01"}}}`), nopSink{})
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","_meta":{"traceparent":"00-`+traceID+`-0000000000000000-01"}}}`), nopSink{})
	st := srv.OpenStateless(Peer{Remote: "127.0.0.1:10"})
	defer st.Close()
	st.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`), nopSink{})

	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, sp := range spans {
		if sp.SpanKind != oteltrace.SpanKindServer {
			t.Errorf("span %q of kind %v, want server", sp.Name, sp.SpanKind)
		}
		byName[sp.Name] = sp
	}
	if len(spans) != 4 || len(byName) != 4 {
		t.Fatalf("%d spans %v, want initialize, tools/call echo, tools/call (unknown), tools/list", len(spans), byName)
	}
	attrs := func(sp tracetest.SpanStub) map[attribute.Key]string {
		m := map[attribute.Key]string{}
		for _, kv := range sp.Attributes {
			m[kv.Key] = kv.Value.Emit()
		}
		return m
	}
	call := byName["tools/call echo"]
	if call.Parent.TraceID().String() != traceID || call.Parent.SpanID().String() != parentID || !call.Parent.IsRemote() {
		t.Errorf("tools/call's parent %v, want the client's span", call.Parent)
	}
	want := map[attribute.Key]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"mcp.protocol.version": "2025-11-25", "mcp.session.id": "s1", "jsonrpc.request.id": "a", "network.transport": "tcp"}
	got := attrs(call)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("tools/call %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if cat.spans != 1 {
		t.Errorf("the catalog saw the request's span in %d calls' contexts, want 1 (echo)", cat.spans)
	}
	unknown := byName["tools/call nope"]
	if unknown.Parent.IsValid() || unknown.Status.Code != codes.Error || attrs(unknown)["error.type"] != "-32602" {
		t.Errorf("unknown tool: parent %v (an invalid traceparent: none), status %v, attributes %v; want an error -32602",
			unknown.Parent, unknown.Status, attrs(unknown))
	}
	list := attrs(byName["tools/list"])
	if list["mcp.protocol.version"] != StatelessVersion || list["mcp.session.id"] != "" {
		t.Errorf("stateless tools/list attributes %v, want protocol %s and no session", list, StatelessVersion)
	}
}
