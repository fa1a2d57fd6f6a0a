package serve

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/plughost/plughost/host/manager"
)

// TestDeclaredSummary: what a declared server runs or reaches, without
// what may hold a secret (a URL's user, query and fragment); "" for a
// file that is no declaration, or does not parse.
func TestDeclaredSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := map[string]struct {
		file, content, want string
	}{
		"stdio":     {"notes.mcp.json", `{"command": "npx", "args": ["-y", "@acme/notes"], "env": {"KEY": "s3cret"}}`, "npx -y @acme/notes"},
		"remote":    {"api.mcp.json", `{"type": "http", "url": "https://me:pw@api.example.com/mcp?key=s3cret#x"}`, "http https://api.example.com/mcp"},
		"a binary":  {"echo", "#!/bin/sh\n", ""},
		"malformed": {"bad.mcp.json", `{"command": `, ""},
	}
	for name, tc := range tests {
		path := filepath.Join(dir, tc.file)
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := declaredSummary(path); got != tc.want {
			t.Errorf("%s: declaredSummary = %q, want %q", name, got, tc.want)
		}
	}
}

// TestFailedPlugin: a plugin that is not running, idle or quarantined has
// failed, and so has one whose last start or run ended in an error.
func TestFailedPlugin(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		st   manager.PluginStatus
		want bool
	}{
		"running":              {manager.PluginStatus{State: manager.StateRunning}, false},
		"idle":                 {manager.PluginStatus{State: manager.StateIdle}, false},
		"quarantined":          {manager.PluginStatus{State: manager.StateQuarantined}, false},
		"failed":               {manager.PluginStatus{State: manager.StateFailed}, true},
		"refused":              {manager.PluginStatus{State: manager.StateRefused}, true},
		"running, after error": {manager.PluginStatus{State: manager.StateRunning, LastError: "crashed"}, true},
	}
	for name, tc := range tests {
		if got := failedPlugin(tc.st); got != tc.want {
			t.Errorf("%s: failedPlugin = %v, want %v", name, got, tc.want)
		}
	}
	if got := indent("a\n\nb ", "  "); got != "  a\n\n  b" {
		t.Errorf("indent = %q", got)
	}
}
