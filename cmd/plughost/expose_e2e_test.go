package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The configuration's allow and deny lists hide what they name from a
// real client: a hidden tool is neither listed nor callable (-32602), the
// rest is served, and plughost plugins says what is hidden.
func TestExposeListsHideTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyPlugin(t, "echo", dir, "echo")
	copyPlugin(t, "files", dir, "files")
	cfg := writeConfig(t, `
plugins {
  plugin "echo" {
    tools {
      deny = ["sleep"]
    }
  }
  plugin "files" {
    tools {
      allow = ["read_*", "list_*"]
    }
  }
}
`)
	h := startTestHostIn(t, dir, []string{"--config", cfg})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := h.toolNames(ctx) // complete from the first request
	if !strings.Contains(" "+strings.Join(got, " ")+" ", " echo ") {
		t.Errorf("tools/list lacks echo: %v", got)
	}
	for _, hidden := range []string{"sleep", "create_file"} {
		if strings.Contains(" "+strings.Join(got, " ")+" ", " "+hidden+" ") {
			t.Errorf("tools/list has %s, which the configuration hides: %v", hidden, got)
		}
	}
	if res := h.call("echo", map[string]any{"text": "shown"}); text(res) != "shown" {
		t.Errorf("echo = %q", text(res))
	}
	_, err := h.session.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("calling the hidden sleep: %v, want -32602 unknown tool", err)
	}

	stdout, stderr, err := tryCLI(t, "plugins", "--plugins", dir, "--config", cfg)
	if err != nil {
		t.Fatalf("plughost plugins: %v\n%s", err, stderr)
	}
	for _, want := range []string{"hidden by the configuration: tool sleep", "hidden by the configuration: tool create_file"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plughost plugins does not say %q:\n%s", want, stdout)
		}
	}
}
