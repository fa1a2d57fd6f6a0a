//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/plughost/plughost/internal/embedtest"
	"github.com/plughost/plughost/internal/toolsearcheval"
)

// TestToolSearchByMeaning serves three servers of the corpus (airbnb,
// weather, filesystem: 16 tools) as plugins in tool search mode with the
// search block's embeddings naming a real model's endpoint
// (conformance/embeddings.mjs), and searches for what no word of the
// right tools say ("homestays"): the host embeds the tools, then the
// query, and ranks one of airbnb's first.
func TestToolSearchByMeaning(t *testing.T) {
	t.Parallel()
	dir, err := toolsearcheval.Dir()
	if err != nil {
		t.Fatal(err)
	}
	all, err := os.ReadFile(filepath.Join(dir, "tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	servers := []string{"airbnb", "weather", "filesystem"}
	var lines []byte
	for _, line := range bytes.Split(all, []byte("\n")) {
		var tool struct{ Server string }
		if json.Unmarshal(line, &tool) == nil && (tool.Server == servers[0] || tool.Server == servers[1] || tool.Server == servers[2]) {
			lines = append(append(lines, line...), '\n')
		}
	}
	tools := writeCorpus(t, "")
	if err := os.WriteFile(tools, lines, 0o644); err != nil {
		t.Fatal(err)
	}
	plugins := t.TempDir()
	for _, s := range servers {
		copyPlugin(t, "corpus", plugins, s)
	}
	config := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(config, fmt.Appendf(nil, "sandbox {\n  allow_read = [%q]\n}\nsearch {\n  embeddings {\n    url = %q\n    model = %q\n    timeout = \"2m\"\n  }\n}\n",
		tools, embedtest.Start(t), embedtest.Model), 0o600); err != nil {
		t.Fatal(err)
	}

	h := startTestHostIn(t, plugins, []string{"--config", config})
	h.stderr.await(t, "tool search: every tool embedded: texts=16")
	res := h.call("search_tools", map[string]any{"query": "homestays in Paris for three nights", "limit": 3})
	var found struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &found); err != nil || res.IsError || len(found.Tools) == 0 {
		t.Fatalf("search_tools: %s (isError %v): %v", b, res.IsError, err)
	}
	if first := found.Tools[0].Name; first != "airbnb_search" && first != "airbnb_listing_details" {
		t.Errorf("search_tools found %s first; want one of airbnb's tools, by meaning", first)
	}
}
