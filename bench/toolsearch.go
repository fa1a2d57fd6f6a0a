package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/plughost/plughost/host/toolsearch"
	"github.com/plughost/plughost/internal/toolsearcheval"
)

// toolSearchFigures are the figures of tool search mode (issue 19) on the
// tool-search corpus (../shared/toolsearch: LiveMCPBench's 70 MCP servers,
// 527 tools, 49 development tasks), laid out as 70 plugins: one hard link
// of corpusplugin per server, named after it, serving its tools as the
// server listed them and its title and description (Describe).
type toolSearchFigures struct {
	Sandbox bool `json:"sandbox"`
	Plugins int  `json:"plugins"`
	// Tools is how many the full tools/list holds (the catalog refuses a
	// tool whose inputSchema does not compile).
	Tools   int `json:"tools"`
	Queries int `json:"queries"`
	// FullListBytes and SearchListBytes: every page of tools/list, the
	// whole JSON-RPC responses, from a host in full mode and one in search
	// mode (--tool-search) serving the same plugins.
	FullListBytes   int     `json:"full_list_bytes"`
	SearchListBytes int     `json:"search_list_bytes"`
	ListRatio       float64 `json:"list_ratio"`
	// RecallAt/HitAt at 1, 5 and 10 (toolsearcheval's definitions, the
	// corpus README's), from search_tools (limit 10) through MCP; InProcess
	// the same of host/toolsearch in this process over the same documents.
	RecallAt  [3]float64 `json:"recall_at_1_5_10"`
	HitAt     [3]float64 `json:"hit_at_1_5_10"`
	InProcess string     `json:"in_process"`
	// Searches*: the latency of a search_tools call through MCP (stdio),
	// over Rounds rounds of the queries, after one round of warm-up.
	Rounds         int     `json:"rounds"`
	SearchP50us    float64 `json:"search_p50_us"`
	SearchP99us    float64 `json:"search_p99_us"`
	SearchResultKB float64 `json:"search_result_mean_kb"`
}

// benchToolSearch runs the tool search section: plughost in full mode,
// then in search mode, over the corpus in corpusDir as plugins, sandboxed
// when the sandbox is present (the plugins read the corpus through the
// sandbox's allow_read).
func benchToolSearch(ctx context.Context, cfg *config, corpusDir string, rounds int) (toolSearchFigures, error) {
	f := toolSearchFigures{Sandbox: cfg.sandbox}
	data, err := toolsearcheval.LoadDir(corpusDir)
	if err != nil {
		return f, fmt.Errorf("the corpus (-toolsearch): %w", err)
	}
	layout, err := toolsearcheval.Lay(data.Servers)
	if err != nil {
		return f, err
	}
	f.Plugins, f.Queries, f.Rounds = len(data.Servers), len(data.Queries), rounds
	dir, err := os.MkdirTemp(cfg.work, "toolsearch-")
	if err != nil {
		return f, err
	}
	defer os.RemoveAll(dir)
	plugins := filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		return f, err
	}
	for _, s := range data.Servers {
		if err := linkOrCopy(filepath.Join(cfg.binDir, "corpusplugin"), filepath.Join(plugins, toolsearcheval.PluginName(s.Name))); err != nil {
			return f, fmt.Errorf("corpusplugin (make bench-bin builds it): %w", err)
		}
	}
	// The plugins find tools.jsonl among the paths they may read.
	config := filepath.Join(dir, "plughost.hcl")
	grant := fmt.Sprintf("sandbox {\n  allow_read = [%q]\n}\n", filepath.Join(corpusDir, "tools.jsonl"))
	if err := os.WriteFile(config, []byte(grant), 0o644); err != nil {
		return f, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	// `plughost plugins` loads every plugin, however long that takes, and
	// says which tools the catalog serves; the full host is then listed
	// until it lists them all (a client's first list waits at most 10 s
	// for the plugins to load, too short for 70 on a busy machine). It
	// leaves its catalog cache to the search host, which serves from it
	// at once (its plugins lazy: none starts).
	cache := filepath.Join(dir, "cache")
	served, err := servedTools(ctx, cfg, plugins, config)
	if err != nil {
		return f, err
	}
	start := func(extra ...string) (*server, error) {
		spec := cfg.plughost(cfg.variants[0].name, append([]string{"--config", config}, extra...), plugins)
		spec.Env = []string{"XDG_CACHE_HOME=" + cache}
		s, err := startServer(ctx, spec, stdio, cfg.work)
		if err != nil {
			return nil, err
		}
		if _, err := initialize(ctx, s.conn); err != nil {
			s.stop()
			return nil, fmt.Errorf("%w (stderr: %s)", err, s.stderrTail())
		}
		return s, nil
	}

	full, err := start()
	if err != nil {
		return f, err
	}
	_, err = waitForTools(ctx, full.conn, 2*time.Minute, func(names []string) bool { return len(names) == len(served) })
	if err == nil {
		f.FullListBytes, err = listBytes(ctx, full.conn)
	}
	full.stop()
	if err != nil {
		return f, fmt.Errorf("full mode (`plughost plugins` says %d tools are served): %w", len(served), err)
	}
	f.Tools = len(served)

	s, err := start("--tool-search")
	if err != nil {
		return f, err
	}
	defer s.stop()
	if f.SearchListBytes, err = listBytes(ctx, s.conn); err != nil {
		return f, fmt.Errorf("search mode: %w", err)
	}
	f.ListRatio = ratio(float64(f.SearchListBytes), float64(f.FullListBytes))

	var lat latencies
	var resultBytes int
	search := func(query string, k int) ([]string, error) {
		params, _ := json.Marshal(map[string]any{"name": "search_tools", "arguments": map[string]any{"query": query, "limit": k}})
		t0 := time.Now()
		resp, err := s.conn.call(ctx, "tools/call", params)
		lat = append(lat, time.Since(t0))
		resultBytes += len(resp)
		if err != nil {
			return nil, err
		}
		return foundIDs(resp, layout)
	}
	var searchErr error
	metrics := toolsearcheval.Evaluate(data.Queries, func(query string, k int) []string {
		ids, err := search(query, k)
		if err != nil && searchErr == nil {
			searchErr = fmt.Errorf("search_tools %q: %w", query, err)
		}
		return ids
	})
	if searchErr != nil {
		return f, searchErr
	}
	f.RecallAt, f.HitAt = metrics.Recall, metrics.Hit
	lat, resultBytes = nil, 0 // the first round was the warm-up
	for range rounds {
		for _, q := range data.Queries {
			if _, err := search(q.Text, 10); err != nil {
				return f, err
			}
		}
	}
	f.SearchP50us, f.SearchP99us = us(lat.quantile(0.5)), us(lat.quantile(0.99))
	f.SearchResultKB = float64(resultBytes) / float64(len(lat)) / 1000
	f.InProcess = inProcess(data, layout, served).String()
	return f, nil
}

// servedTools runs `plughost plugins --json` on the plugin directory, and
// returns the exposed names of the tools it says are served (the catalog
// refuses a tool whose inputSchema does not compile).
func servedTools(ctx context.Context, cfg *config, plugins, config string) ([]string, error) {
	cmd := exec.CommandContext(ctx, cfg.plughostBn, "plugins", "--json", "--plugins", plugins, "--workspace", cfg.work, "--config", config)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output() // status 1 when a definition was refused
	var r struct {
		Plugins []struct {
			Name   string
			Failed bool
			Error  string
			Tools  []struct{ ExposedName string }
		}
	}
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		return nil, fmt.Errorf("plughost plugins --json: %v (%v; stderr: %.600s)", jerr, err, stderr.String())
	}
	var served []string
	for _, p := range r.Plugins {
		if p.Failed {
			return nil, fmt.Errorf("plughost plugins: %s failed: %s", p.Name, p.Error)
		}
		for _, t := range p.Tools {
			served = append(served, t.ExposedName)
		}
	}
	return served, nil
}

// foundIDs reads the corpus IDs of the tools a search_tools response
// found, best first.
func foundIDs(resp []byte, layout *toolsearcheval.Layout) ([]string, error) {
	res, err := resultOf(resp)
	if err != nil {
		return nil, err
	}
	var r struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.IsError {
		return nil, fmt.Errorf("not a search result: %.200s", res)
	}
	ids := make([]string, len(r.StructuredContent.Tools))
	for i, t := range r.StructuredContent.Tools {
		if ids[i] = layout.IDs[t.Name]; ids[i] == "" {
			return nil, fmt.Errorf("found %q, which the layout does not expose", t.Name)
		}
	}
	return ids, nil
}

// inProcess scores host/toolsearch in this process on the documents the
// catalog served (served: the full list's names), for comparison.
func inProcess(data *toolsearcheval.Data, layout *toolsearcheval.Layout, served []string) toolsearcheval.Metrics {
	ok := map[string]bool{}
	for _, n := range served {
		ok[n] = true
	}
	x := toolsearch.New()
	for _, s := range data.Servers {
		name := toolsearcheval.PluginName(s.Name)
		var defs []json.RawMessage
		for _, d := range layout.Defs[name] {
			var def struct{ Name string }
			if json.Unmarshal(d, &def) == nil && ok[def.Name] {
				defs = append(defs, d)
			}
		}
		_ = x.Set(name, toolsearch.Provider{Title: s.Title, Description: s.Description}, defs) // the catalog checked them
	}
	return toolsearcheval.Evaluate(data.Queries, func(query string, k int) []string {
		var ids []string
		for _, h := range x.Search(query, k) {
			ids = append(ids, layout.IDs[h.Name])
		}
		return ids
	})
}

// listBytes fetches every page of tools/list and returns the bytes of the
// responses.
func listBytes(ctx context.Context, c conn) (int, error) {
	n, params := 0, []byte(`{}`)
	for {
		resp, err := c.call(ctx, "tools/list", params)
		if err != nil {
			return n, err
		}
		n += len(resp)
		res, err := resultOf(resp)
		if err != nil {
			return n, fmt.Errorf("tools/list: %w", err)
		}
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return n, fmt.Errorf("tools/list: %w", err)
		}
		if page.NextCursor == "" {
			return n, nil
		}
		params, _ = json.Marshal(map[string]string{"cursor": page.NextCursor})
	}
}

// printToolSearch writes the section's lines.
func printToolSearch(w io.Writer, f *toolSearchFigures) {
	fmt.Fprintf(w, "tool search (issue 19): %d plugins (sandbox %v), %d tools, %d tasks of ../shared/toolsearch, search_tools limit 10 through MCP (stdio)\n", f.Plugins, f.Sandbox, f.Tools, f.Queries)
	fmt.Fprintf(w, "  tools/list bytes: search mode %d, full mode %d: %.2f%%\n", f.SearchListBytes, f.FullListBytes, 100*f.ListRatio)
	fmt.Fprintf(w, "                      %s\n", toolsearcheval.Header)
	fmt.Fprintf(w, "  through MCP         %v\n", toolsearcheval.Metrics{Recall: f.RecallAt, Hit: f.HitAt})
	fmt.Fprintf(w, "  in process          %s\n", f.InProcess)
	fmt.Fprintf(w, "  search_tools p50 %.0f µs, p99 %.0f µs (%d rounds of the tasks), %.1f kB a result\n\n", f.SearchP50us, f.SearchP99us, f.Rounds, f.SearchResultKB)
}
