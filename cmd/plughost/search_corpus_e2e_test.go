package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/toolsearch"
	"github.com/plughost/plughost/internal/toolsearcheval"
)

// TestToolSearchCorpus lays the tool-search corpus (../shared/toolsearch:
// 70 MCP servers, 527 tools) out as 70 plugins (corpusplugin) and serves
// them twice, in full and in tool search mode. It holds the product to
// what issue 19 asks of search mode, through MCP:
//
//   - tools/list in search mode is at most 5% of the full list's bytes;
//   - the 49 development tasks, searched with search_tools, score exactly
//     what host/toolsearch scores in process on the same documents (the
//     tools under their exposed names, each plugin's title and
//     description): the path from the plugins' Describe through the
//     catalog to the index loses nothing.
//
// The figures (and the latency) are the bench's to print: make bench
// BENCH_FLAGS='-only toolsearch'.
func TestToolSearchCorpus(t *testing.T) {
	t.Parallel()
	data, err := toolsearcheval.Load()
	if err != nil {
		t.Fatalf("the evaluation data (../shared/toolsearch beside the repository): %v", err)
	}
	dir, err := toolsearcheval.Dir()
	if err != nil {
		t.Fatal(err)
	}
	layout, err := toolsearcheval.Lay(data.Servers)
	if err != nil {
		t.Fatal(err)
	}
	plugins := t.TempDir()
	for _, s := range data.Servers {
		if err := os.Link(bin.plugins["corpus"], filepath.Join(plugins, toolsearcheval.PluginName(s.Name))); err != nil {
			t.Fatal(err)
		}
	}
	config := corpusConfig(t, filepath.Join(dir, "tools.jsonl"))

	// Loading 70 sandboxed plugins may take longer than a client's first
	// list waits for (10 s) on a busy machine: the test waits for the
	// full host to say each loaded (after it publishes the plugin and
	// writes its catalog cache entry), then lists. The search host serves
	// from that cache at once (its plugins lazy: none starts), so its
	// index is complete from its first search. The cache is valid for one
	// launch configuration: the hosts share the workspace too.
	cache, workspace := t.TempDir(), t.TempDir()
	//
	// Names are kept while their plugin lives (issue 31): a plugin that
	// loads after the start's hold is named against those already served,
	// so on a busy machine the first, cold start's names depend on the
	// order the plugins load in. A start from the cache publishes every
	// plugin at once, named together as toolsearcheval.Lay names them: the
	// full list is taken from a second start, as the search host's is.
	warm := startTestHostIn(t, plugins, []string{"--config", config, "--workspace", workspace}, "XDG_CACHE_HOME="+cache)
	for _, s := range data.Servers {
		warm.stderr.await(t, "plugin loaded: plugin="+toolsearcheval.PluginName(s.Name)+" ")
	}
	warm.close()
	full := startTestHostIn(t, plugins, []string{"--config", config, "--workspace", workspace}, "XDG_CACHE_HOME="+cache)
	fullBytes, served := listBytes(t, full.session)
	full.close()
	// The catalog refuses a tool whose inputSchema does not compile (one
	// of the corpus's, pdf-reader-mcp's read_pdf, uses draft-04's boolean
	// exclusiveMinimum): the index holds what the catalog serves.
	if len(served) < data.Tools()-1 {
		t.Fatalf("full mode lists %d tools, want the corpus's %d but read_pdf\nstderr:\n%s", len(served), data.Tools(), full.stderr)
	}
	for name := range served {
		if layout.IDs[name] == "" {
			t.Fatalf("full mode lists %q, a name toolsearcheval.Lay does not expose", name)
		}
	}

	h := startTestHostIn(t, plugins, []string{"--config", config, "--workspace", workspace, "--tool-search"}, "XDG_CACHE_HOME="+cache)
	searchBytes, _ := listBytes(t, h.session)
	ratio := float64(searchBytes) / float64(fullBytes)
	t.Logf("tools/list: %d bytes in search mode, %d in full mode (%.2f%%)", searchBytes, fullBytes, 100*ratio)
	if ratio > 0.05 {
		t.Errorf("tools/list in search mode is %.1f%% of the full list's bytes, want at most 5%%", 100*ratio)
	}

	viaMCP := toolsearcheval.Evaluate(data.Queries, func(query string, k int) []string {
		res := h.call("search_tools", map[string]any{"query": query, "limit": k})
		var found struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &found); err != nil || res.IsError {
			t.Fatalf("search_tools %q: %s (isError %v): %v", query, b, res.IsError, err)
		}
		ids := make([]string, len(found.Tools))
		for i, f := range found.Tools {
			if ids[i] = layout.IDs[f.Name]; ids[i] == "" {
				t.Fatalf("search_tools %q found %q, a name toolsearcheval.Lay does not expose", query, f.Name)
			}
		}
		return ids
	})

	x := toolsearch.New()
	for _, s := range data.Servers {
		name := toolsearcheval.PluginName(s.Name)
		var defs []json.RawMessage
		for _, d := range layout.Defs[name] {
			var def struct{ Name string }
			if json.Unmarshal(d, &def) == nil && served[def.Name] {
				defs = append(defs, d)
			}
		}
		if err := x.Set(name, toolsearch.Provider{Title: s.Title, Description: s.Description}, defs); err != nil {
			t.Fatal(err)
		}
	}
	inProcess := toolsearcheval.Evaluate(data.Queries, func(query string, k int) []string {
		var ids []string
		for _, hit := range x.Search(query, k) {
			ids = append(ids, layout.IDs[hit.Name])
		}
		return ids
	})
	t.Logf("%d queries    %s\nthrough MCP   %v\nin process    %v", len(data.Queries), toolsearcheval.Header, viaMCP, inProcess)
	if viaMCP != inProcess {
		t.Errorf("through MCP the searches score %v, in process %v: the product's path changes the ranking", viaMCP, inProcess)
	}
}

// listBytes lists every page of cs's tools and returns the bytes of their
// JSON and their names.
func listBytes(t *testing.T, cs *mcp.ClientSession) (bytes int, names map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params := &mcp.ListToolsParams{}
	names = map[string]bool{}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		b, err := json.Marshal(res.Tools)
		if err != nil {
			t.Fatal(err)
		}
		bytes += len(b)
		for _, tl := range res.Tools {
			names[tl.Name] = true
		}
		if res.NextCursor == "" {
			return bytes, names
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}
