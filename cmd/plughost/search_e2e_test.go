package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolSearchStdio: with a search block pinning echo, tools/list shows
// echo, search_tools and call_tool alone; a search in plain words finds
// the clock's tool, call_tool runs it, and so does a call by its name.
func TestToolSearchStdio(t *testing.T) {
	t.Parallel()
	config := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(config, []byte("search {\n  pinned = [\"echo\"]\n  limit = 3\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startTestHostWith(t, []string{"--config", config}, "echo", "clock")
	checkSearchMode(t, h.session, "call_tool", "echo", "search_tools")

	// A plugin loaded mid-session is found; unloaded, it is not.
	copyPlugin(t, "files", h.pluginDir, "files")
	awaitFound(t, h, "write a text file", "create_file", true)
	if err := os.Remove(filepath.Join(h.pluginDir, "files")); err != nil {
		t.Fatal(err)
	}
	awaitFound(t, h, "write a text file", "create_file", false)
}

// awaitFound searches query after each list_changed (and every 200 ms)
// until the result holds the tool name (or, when found is false, no longer
// holds it). The index follows the catalog at each publication
// (catalog.FollowTools, a few milliseconds for a plugin's tools);
// list_changed waits for the catalog's burst to go quiet (50ms) first, so
// the search it prompts normally sees the change.
func awaitFound(t *testing.T, h *testHost, query, name string, found bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		res := h.call("search_tools", map[string]any{"query": query})
		if strings.Contains(text(res), "- "+name+": ") == found {
			return
		}
		select {
		case <-h.listChanged:
		case <-time.After(200 * time.Millisecond):
			// Again, in case the search ran before the index had the change:
			// the index has no event of its own outside the process.
		case <-ctx.Done():
			t.Fatalf("search %q: %q; want %s found: %v (not within 30s)", query, text(res), name, found)
		}
	}
}

// TestToolSearchHTTP: serve --tool-search over Streamable HTTP, no tool
// pinned.
func TestToolSearchHTTP(t *testing.T) {
	t.Parallel()
	h := startHTTPHostWith(t, []string{"--tool-search"}, "echo", "clock", "files")
	cs := h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: h.httpClient(nil)}, nil)
	checkSearchMode(t, cs, "call_tool", "search_tools")
}

// checkSearchMode lists, searches and calls through cs, a session of a
// host in tool search mode serving at least the echo and clock plugins,
// whose tools/list must be listed (sorted).
func checkSearchMode(t *testing.T, cs *mcp.ClientSession, listed ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var names []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, listed) {
		t.Errorf("tools/list: %v, want %v", names, listed)
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		return res
	}

	res := call("search_tools", map[string]any{"query": "what is the current date and time", "limit": 3})
	var found struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &found); err != nil || res.IsError || len(found.Tools) == 0 || len(found.Tools) > 3 {
		t.Fatalf("search_tools: %s (isError %v), want 1 to 3 tools", b, res.IsError)
	}
	if found.Tools[0].Name != "get_current_time" || found.Tools[0].InputSchema == nil || !strings.Contains(text(res), "- get_current_time: ") {
		t.Errorf("search_tools: %s\n%s\nwant get_current_time first, with its inputSchema", b, text(res))
	}

	if res := call("call_tool", map[string]any{"name": "get_current_time"}); res.IsError || text(res) == "" {
		t.Errorf("call_tool get_current_time: %v %q", res.IsError, text(res))
	}
	if res := call("get_current_time", nil); res.IsError || text(res) == "" {
		t.Errorf("get_current_time by its name: %v %q", res.IsError, text(res))
	}
	if res := call("call_tool", map[string]any{"name": "echo", "arguments": map[string]any{"text": "found"}}); res.IsError || text(res) != "found" {
		t.Errorf("call_tool echo: %v %q", res.IsError, text(res))
	}
	if res := call("call_tool", map[string]any{"name": "echo", "arguments": map[string]any{"text": 7}}); !res.IsError {
		t.Errorf("call_tool echo with a number for text: %q, want an isError result (echo's inputSchema)", text(res))
	}
	if res := call("call_tool", map[string]any{"name": "nope"}); !res.IsError || !strings.Contains(text(res), `no tool is named "nope"`) {
		t.Errorf("call_tool nope: %v %q, want an isError result naming it", res.IsError, text(res))
	}
}
