package streamable

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/hooks"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/tool"
)

// redactAll is a hook asker that redacts "AKIAEXAMPLE" in every result.
type redactAll struct{}

func (redactAll) AskHook(_ context.Context, _ string, q *tool.HookCall) (*tool.HookAnswer, error) {
	if q.Point == tool.AfterCall {
		return &tool.HookAnswer{Decision: tool.HookRewrite, Rewritten: json.RawMessage(strings.ReplaceAll(string(q.Result), "AKIAEXAMPLE", "[REDACTED]"))}, nil
	}
	return &tool.HookAnswer{Decision: tool.HookPass}, nil
}

// leakOne offers one tool whose result leaks a key.
type leakOne struct{}

func (leakOne) Name() string { return "leaky" }
func (leakOne) Tools() []tool.Def {
	return []tool.Def{{Name: "leak", JSON: json.RawMessage(`{"name":"leak","inputSchema":{"type":"object"}}`)}}
}
func (leakOne) CallTool(context.Context, *tool.Call) (json.RawMessage, error) {
	return tool.TextResult("the key is AKIAEXAMPLE"), nil
}

// TestHooksOverHTTP: a call over Streamable HTTP (a session, and the
// stateless 2026-07-28 revision) and over HTTP+SSE passes the catalog's
// hooks: the go-sdk client reads the result redacted.
func TestHooksOverHTTP(t *testing.T) {
	t.Parallel()
	chain, err := hooks.New([]config.Hook{{Name: "secrets", Plugin: "secrets", On: []string{"after_call"}, Mode: "enforce",
		OnError: "refuse", Timeout: 5 * time.Second}}, redactAll{}, &hooks.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(&catalog.Options{Logger: hclog.NewNullLogger(), Hooks: chain})
	t.Cleanup(cat.Close)
	cat.Set(leakOne{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, mcp.NewServer(cat, &mcp.Options{Logger: hclog.NewNullLogger()}), ln, nil) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	url := "http://" + ln.Addr().String()
	for name, tc := range map[string]struct {
		transport sdk.Transport
		opts      *sdk.ClientSessionOptions
	}{
		"streamable session":   {&sdk.StreamableClientTransport{Endpoint: url + PathMCP}, sessionEra},
		"streamable stateless": {&sdk.StreamableClientTransport{Endpoint: url + PathMCP}, nil},
		"legacy sse":           {&sdk.SSEClientTransport{Endpoint: url + PathSSE}, sessionEra},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "hooks-test", Version: "1"}, nil).Connect(ctx, tc.transport, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "leak"})
			if err != nil {
				t.Fatal(err)
			}
			if txt := res.Content[0].(*sdk.TextContent).Text; txt != "the key is [REDACTED]" {
				t.Errorf("leak = %q, want the key redacted", txt)
			}
		})
	}
}
