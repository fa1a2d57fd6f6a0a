package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWrappedServerPoisonedDefinitionHeld: a declared server wrapped by
// plughost, a real stdio server on the official TypeScript SDK whose tool
// "add" carries Invariant Labs' tool-poisoning payload (testdata/
// poisoned-server.cjs), is screened by the bundled definitions guardrail
// at on_definitions before any client sees it: add is held back (not
// listed, its call refused with the hook's reason, flagged with it in
// plughost plugins) and the clean subtract is served.
func TestWrappedServerPoisonedDefinitionHeld(t *testing.T) {
	t.Parallel()
	_, node := referenceServer(t, "server-everything") // node, and the conformance packages
	modules, err := filepath.Abs(filepath.Join("..", "..", "conformance", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "poisoned-server.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	declare(t, dir, "poisoned", map[string]any{"command": node, "args": []string{script}, "env": map[string]string{"NODE_PATH": modules}})
	copyPlugin(t, "definitions", dir, "definitions")
	config := writeConfig(t, hooksConfig(`  hook "definitions" {
    plugin = "definitions"
    on     = ["on_definitions"]
  }
`)+"sandbox {\n  plugin \"poisoned\" {\n    allow_read = ["+strconv.Quote(modules)+", "+strconv.Quote(filepath.Dir(script))+"]\n  }\n}\n")
	c := serveWrappedStdio(t, dir, config)
	c.awaitTool(t, "subtract")
	for tool, err := range c.cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "add" {
			t.Errorf("the poisoned tool is listed: %q", tool.Description)
		}
	}
	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
	switch {
	case err != nil:
		if !strings.Contains(err.Error(), `hook "definitions"`) {
			t.Errorf("a call of the held tool: %v, want the hook's reason", err)
		}
	case !res.IsError || !strings.Contains(text(res), `hook "definitions"`):
		t.Errorf("a call of the held tool: %q (isError %v), want the hook's reason", text(res), res.IsError)
	}
	if got := c.call(t, "subtract", map[string]any{"a": 5, "b": 2}); got != "3" {
		t.Errorf("subtract = %q", got)
	}
	out, _ := plughostWith(t, nil, "plugins", "--plugins", dir, "--config", config)
	if !strings.Contains(out, "add") || !strings.Contains(out, "flagged") || !strings.Contains(out, `hook "definitions"`) {
		t.Errorf("plughost plugins does not show add flagged with the hook's reason:\n%s", out)
	}
}
