package wrapped

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// A question the server asks while it serves a completion (or a
// subscription, or the wrapper's own listing) is not the tool call's in
// flight beside it: handing it to that call would show one client's
// question (caused by another client's completion) to the other. With
// another request to the server outstanding, it cannot be attributed, and
// is refused, as when two exchanges are in flight.
func TestWrappedQuestionDuringCompletionNotAttributed(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	rootsErr := make(chan error, 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "0"}, &mcp.ServerOptions{
		CompletionHandler: func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			_, err := req.Session.ListRoots(ctx, nil)
			rootsErr <- err
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
		},
	})
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	ct := serveInProcess(t, srv)
	p, _, err := start(t.Context(), &Options{Server: &declared.Server{Type: declared.TypeHTTP, URL: "http://in-memory"}, Name: "plughost", Version: "0", Logger: hclog.NewNullLogger()}, ct)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		res json.RawMessage
		err error
	}
	called := make(chan result, 1)
	go func() {
		res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "slow", Arguments: json.RawMessage(`{}`)})
		called <- result{res, err}
	}()
	recv(t, started, "tool call")
	completed := make(chan result, 1)
	go func() {
		res, err := pluginhost.Of(p).Complete(t.Context(), json.RawMessage(`{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"v"}}`))
		completed <- result{res, err}
	}()
	select {
	case r := <-called:
		var ir *pluginproto.InputRequiredError
		if errors.As(r.err, &ir) {
			t.Fatalf("the tool call's client was asked the completion's question: %s", ir.Requests)
		}
		t.Fatalf("the tool call ended early: %s, %v", r.res, r.err)
	case err := <-rootsErr:
		if err == nil {
			t.Fatal("the server's roots/list during a completion was answered")
		}
	case <-t.Context().Done():
	}
	if r := recv(t, completed, "completion"); r.err != nil {
		t.Errorf("Complete = %s, %v", r.res, r.err)
	}
	close(release)
	if r := recv(t, called, "tool call's result"); r.err != nil {
		t.Errorf("CallTool = %s, %v; want the tool's result", r.res, r.err)
	}
}
