package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The operator's override blocks change what a real client is served of
// a plugin's tool, and plughost plugins shows the change beside the
// plugin's text; search { description } is search_tools' description.
func TestOverridesServedAndShown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyPlugin(t, "echo", dir, "echo")
	cfg := writeConfig(t, `
override "echo" {
  plugin      = "echo"
  description = "Repeats the text, as our team uses it."
  annotations {
    idempotentHint = true
  }
}
override "echo" {
  plugin = "other"
  title  = "Not this plugin's"
}
`)
	h := startTestHostIn(t, dir, []string{"--config", cfg})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var echo *mcp.Tool
	for _, tl := range res.Tools {
		if tl.Name == "echo" {
			echo = tl
		}
	}
	if echo == nil || echo.Description != "Repeats the text, as our team uses it." || echo.Title == "Not this plugin's" ||
		echo.Annotations == nil || !echo.Annotations.IdempotentHint || !echo.Annotations.ReadOnlyHint {
		t.Fatalf("echo is served as %+v, want the override's description and idempotentHint, and the plugin's readOnlyHint", echo)
	}

	stdout, stderr, err := tryCLI(t, "plugins", "--plugins", dir, "--config", cfg)
	if err != nil {
		t.Fatalf("plughost plugins: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		`overridden: tool echo description: "Repeats the text, as our team uses it." (the plugin's: "Returns the given text unchanged.")`,
		`overridden: tool echo annotations.idempotentHint: "true" (the plugin has none)`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plughost plugins does not say %q:\n%s", want, stdout)
		}
	}
}

// search { description } replaces search_tools' description for a real
// client.
func TestSearchToolsDescriptionConfigured(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyPlugin(t, "echo", dir, "echo")
	cfg := writeConfig(t, `
search {
  description = "Finds the tools of our team's server: say what you need."
}
`)
	h := startTestHostIn(t, dir, []string{"--config", cfg})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) == 0 || res.Tools[0].Name != "search_tools" || res.Tools[0].Description != "Finds the tools of our team's server: say what you need." {
		t.Fatalf("tools/list = %+v, want search_tools first, with the configured description", res.Tools)
	}
}
