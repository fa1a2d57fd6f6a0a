package wrapped

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/internal/pluginhost"
)

// A call's trace context reaches the wrapped server in its request's
// _meta, as traceparent and tracestate; a call without one sends none.
func TestTraceContextReachesServer(t *testing.T) {
	t.Parallel()
	metas := make(chan mcp.Meta, 2)
	srv := mcp.NewServer(&mcp.Implementation{Name: "tracer", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "meta", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			metas <- req.Params.Meta
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() }) // the bridge's GET stream stays open

	p, _, err := Start(t.Context(), &Options{Server: &declared.Server{Type: declared.TypeHTTP, URL: hs.URL}, Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	const parent, state = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=00f067aa0ba902b7"
	if _, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "meta", TraceParent: parent, TraceState: state}); err != nil {
		t.Fatal(err)
	}
	got := <-metas
	if got["traceparent"] != parent || got["tracestate"] != state {
		t.Errorf("the server got _meta %v, want traceparent %s and tracestate %s", got, parent, state)
	}
	if _, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "meta"}); err != nil {
		t.Fatal(err)
	}
	if got := <-metas; got["traceparent"] != nil || got["tracestate"] != nil {
		t.Errorf("a call without a trace context sent _meta %v", got)
	}
}
