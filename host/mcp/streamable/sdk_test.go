package streamable

import (
	"context"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// TestHTTPGoSDKClients: the official go-sdk client, over Streamable HTTP
// and over the deprecated HTTP+SSE transport, initializes, lists, calls
// with progress and logs, and learns of a list change.
func TestHTTPGoSDKClients(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	tests := map[string]struct {
		transport sdk.Transport
		version   string
	}{
		"streamable": {&sdk.StreamableClientTransport{Endpoint: hs.url + PathMCP}, mcp.Versions()[0]},
		"legacy sse": {&sdk.SSEClientTransport{Endpoint: hs.url + PathSSE}, mcp.Versions()[0]},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			client, changed, progress, logs := mcptest.SDKClient()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			cs, err := client.Connect(ctx, tc.transport, sessionEra)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if v := cs.InitializeResult().ProtocolVersion; v != tc.version {
				t.Errorf("negotiated %q, want %q", v, tc.version)
			}
			var names []string
			for tl, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tl.Name)
			}
			if got, want := strings.Join(names, ","), strings.Join(mcptest.ToolNames, ","); got != want {
				t.Errorf("tools %s, want %s", got, want)
			}
			mcptest.CallChatty(t, ctx, cs, progress, logs, "info", "warning", "error")
			// list_changed travels the GET stream (or the SSE stream); the
			// client opens it asynchronously, and a change made before then
			// waits in the session's buffer.
			hs.cat.Change()
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatal("no list_changed")
			}
			if err := cs.Ping(ctx, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// sessionEra makes a go-sdk client speak MCP 2025-11-25 (initialize, a
// session) instead of trying the stateless 2026-07-28 first: the tests
// that use it are about sessions.
var sessionEra = &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
