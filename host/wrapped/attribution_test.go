package wrapped

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// A question the server asks while it serves a completion (or a
// subscription) is not the tool call's in
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

// The wrapper's own listing (after the server's list_changed) is no
// client's request: a question the server asks in the one tool call in
// flight while the wrapper lists again reaches that call's client, as an
// input round, rather than being refused.
func TestWrappedQuestionDuringRelistingReachesTheCall(t *testing.T) {
	started, listing, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "0"}, nil)
	var lists atomic.Int32
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				if lists.Add(1) > 1 { // the listing again, not the first at start
					close(listing)
					<-release
				}
			}
			return next(ctx, method, req)
		}
	})
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		select {
		case <-listing:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if _, err := req.Session.ListRoots(ctx, nil); err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "asked"}}}, nil
	})
	ct := serveInProcess(t, srv)
	p, _, err := start(t.Context(), &Options{Server: &declared.Server{Type: declared.TypeHTTP, URL: "http://in-memory"}, Name: "plughost", Version: "0", Logger: hclog.NewNullLogger()}, ct)
	if err != nil {
		t.Fatal(err)
	}
	defer close(release)
	type result struct {
		res json.RawMessage
		err error
	}
	called := make(chan result, 1)
	go func() {
		res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "ask", Arguments: json.RawMessage(`{}`)})
		called <- result{res, err}
	}()
	recv(t, started, "tool call")
	srv.AddTool(&mcp.Tool{Name: "later", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}) // the server's list_changed: the wrapper lists again
	r := recv(t, called, "the tool call's input round")
	var ir *pluginproto.InputRequiredError
	if !errors.As(r.err, &ir) || !strings.Contains(string(ir.Requests), `"roots/list"`) {
		t.Fatalf("CallTool = %s, %v; want an input round asking roots/list", r.res, r.err)
	}
}
