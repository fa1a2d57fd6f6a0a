package main

import (
	"context"
	"encoding/json"
	"net/http"
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

// writeConfig writes an HCL configuration into a temporary file and
// returns its path.
func writeConfig(t *testing.T, hcl string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(path, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// findAndList searches query (its best hit alone) through cs, awaits the
// list_changed the find prompts on changed, and then the session's list:
// want, sorted. Notifications due before the search are dropped first (a
// plugin's load may still be announced when a test begins; a stale one
// would only make the list be read once more).
func findAndList(t *testing.T, cs *mcp.ClientSession, changed chan struct{}, query, found string, want ...string) {
	t.Helper()
	for drained := false; !drained; {
		select {
		case <-changed:
		default:
			drained = true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": query, "limit": 1}})
	if err != nil || res.IsError || !strings.Contains(text(res), "- "+found+": ") {
		t.Fatalf("search %q: %v %q, want %s found", query, err, text(res), found)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatalf("search %q found %s, and no list_changed came within 30s", query, found)
	}
	awaitToolsOf(t, cs, changed, want...)
}

// TestToolSearchAddFoundStdio: with add_found = 1, a search's find joins
// the session's list (with list_changed) and is called by its name; the
// next find takes its place, and the one it evicted is still called by
// name and through call_tool. A found tool whose plugin goes leaves the
// list.
func TestToolSearchAddFoundStdio(t *testing.T) {
	t.Parallel()
	h := startTestHostWith(t, []string{"--config", writeConfig(t, "search {\n  pinned = [\"echo\"]\n  add_found = 1\n}\n")}, "echo", "clock")
	awaitToolsOf(t, h.session, h.listChanged, "call_tool", "echo", "search_tools")

	findAndList(t, h.session, h.listChanged, "what is the current date and time", "get_current_time", "call_tool", "echo", "get_current_time", "search_tools")
	if res := h.call("get_current_time", nil); res.IsError || text(res) == "" {
		t.Errorf("get_current_time, found and listed, by its name: %v %q", res.IsError, text(res))
	}
	findAndList(t, h.session, h.listChanged, "wait some milliseconds", "sleep", "call_tool", "echo", "search_tools", "sleep")
	if res := h.call("get_current_time", nil); res.IsError || text(res) == "" {
		t.Errorf("get_current_time, evicted, by its name: %v %q", res.IsError, text(res))
	}
	if res := h.call("call_tool", map[string]any{"name": "get_current_time"}); res.IsError || text(res) == "" {
		t.Errorf("call_tool get_current_time, evicted: %v %q", res.IsError, text(res))
	}

	// A plugin loaded mid-session: its tool is found and listed; once the
	// plugin is gone, so is the tool from the list.
	copyPlugin(t, "files", h.pluginDir, "files")
	awaitFound(t, h, "create a file", "create_file", true)
	h.awaitTools("call_tool", "create_file", "echo", "search_tools")
	if err := os.Remove(filepath.Join(h.pluginDir, "files")); err != nil {
		t.Fatal(err)
	}
	h.awaitTools("call_tool", "echo", "search_tools")
}

// TestToolSearchPathStdio: a search block with a path names a path of
// serve --http: over stdio every tool is served.
func TestToolSearchPathStdio(t *testing.T) {
	t.Parallel()
	h := startTestHostWith(t, []string{"--config", writeConfig(t, "search {\n  path = \"/mcp/search\"\n}\n")}, "echo", "clock")
	h.awaitTools("echo", "sleep", "get_current_time")
}

// TestToolSearchAddFoundHTTP: with add_found, two sessions over HTTP each
// list what they found, never what the other did.
func TestToolSearchAddFoundHTTP(t *testing.T) {
	t.Parallel()
	h := startHTTPHostWith(t, []string{"--config", writeConfig(t, "search {\n  add_found = 4\n}\n")}, "echo", "clock")
	connect := func() (*mcp.ClientSession, chan struct{}) {
		changed := make(chan struct{}, 10)
		return h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: h.httpClient(nil)}, changed), changed
	}
	a, aChanged := connect()
	b, bChanged := connect()
	awaitToolsOf(t, a, aChanged, "call_tool", "search_tools")
	awaitToolsOf(t, b, bChanged, "call_tool", "search_tools")

	findAndList(t, a, aChanged, "what is the current date and time", "get_current_time", "call_tool", "get_current_time", "search_tools")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "get_current_time"}); err != nil || res.IsError || text(res) == "" {
		t.Errorf("get_current_time, found and listed, by its name: %v %+v", err, res)
	}
	awaitToolsOf(t, b, bChanged, "call_tool", "search_tools")
	findAndList(t, b, bChanged, "echo the given text", "echo", "call_tool", "echo", "search_tools")
	awaitToolsOf(t, a, aChanged, "call_tool", "get_current_time", "search_tools")
}

// TestToolSearchPathHTTP: with a search block's path, one server serves
// every tool at /mcp and tool search mode at /mcp/search, over the same
// plugins, behind the same guards: a session of each, and a stateless
// (2026-07-28) client at /mcp/search, which searches and calls through
// call_tool, its list unchanged (no session to add to).
func TestToolSearchPathHTTP(t *testing.T) {
	t.Parallel()
	h := startHTTPHostWith(t, []string{"--config", writeConfig(t, "search {\n  path = \"/mcp/search\"\n  add_found = 8\n}\n")}, "echo", "clock")
	h.stderr.await(t, "serving MCP in tool search mode over Streamable HTTP")
	fullChanged, searchChanged := make(chan struct{}, 10), make(chan struct{}, 10)
	full := h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: h.httpClient(nil)}, fullChanged)
	search := h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp/search", HTTPClient: h.httpClient(nil)}, searchChanged)
	awaitToolsOf(t, full, fullChanged, "echo", "get_current_time", "sleep")
	checkSearchMode(t, search, "call_tool", "search_tools") // finds get_current_time
	findAndList(t, search, searchChanged, "wait some milliseconds", "sleep", "call_tool", "get_current_time", "search_tools", "sleep")
	awaitToolsOf(t, full, fullChanged, "echo", "get_current_time", "sleep")

	// A stateless client: the go-sdk speaks 2026-07-28 when not told
	// otherwise (server/discover, then requests without a session).
	client := mcp.NewClient(&mcp.Implementation{Name: "plughost-e2e", Version: "1"}, nil)
	stateless, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: h.base + "/mcp/search", HTTPClient: h.httpClient(nil)}, nil)
	if err != nil {
		t.Fatalf("connect without a session: %v", err)
	}
	defer stateless.Close()
	if v := stateless.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	checkSearchMode(t, stateless, "call_tool", "search_tools")
	awaitToolsOf(t, stateless, nil, "call_tool", "search_tools") // its searches added nothing

	// The guards of /mcp guard /mcp/search.
	req, _ := http.NewRequest("POST", h.base+"/mcp/search", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /mcp/search from a foreign Origin: %d, want 403", resp.StatusCode)
	}
}
