package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// allTools are the tools of the echo, clock and conformance plugins.
var allTools = func() []string {
	t := append([]string{"echo", "sleep", "get_current_time"}, conformanceTools...)
	slices.Sort(t)
	return t
}()

// TestFirstListIsComplete: a client that lists tools right after
// initialize gets every plugin's tools, not the part loaded so far, over
// stdio and over Streamable HTTP.
func TestFirstListIsComplete(t *testing.T) {
	t.Parallel()
	plugins := []string{"echo", "clock", "conformance"}
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		h := startTestHost(t, plugins...)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if got := h.toolNames(ctx); !slices.Equal(got, allTools) {
			t.Errorf("the first tools/list = %v, want %v", got, allTools)
		}
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		h := startHTTPHost(t, plugins...)
		cs := h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: h.httpClient(nil)}, nil)
		var got []string
		for tool, err := range cs.Tools(t.Context(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, tool.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, allTools) {
			t.Errorf("the first tools/list = %v, want %v", got, allTools)
		}
	})
}
