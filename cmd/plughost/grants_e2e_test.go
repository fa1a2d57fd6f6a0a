package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A plugin asks for a directory by name ("notes"); the operator's
// configuration decides which directory that is, and the plugin learns its
// path through the contract ($PLUGHOST_GRANTS, read by the SDK). Without
// the grant, the plugin's error says what to write in the configuration.
func TestGrantedDirectoryReachesThePlugin(t *testing.T) {
	t.Parallel()
	notes := t.TempDir()
	if err := os.Chmod(notes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notes, "today.txt"), []byte("buy milk"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(t *testing.T, config string) *mcp.CallToolResult {
		t.Helper()
		var args []string
		if config != "" {
			file := filepath.Join(t.TempDir(), "plughost.hcl")
			if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			args = []string{"--config", file}
		}
		h := startTestHostWith(t, args, "askplugin")
		h.awaitTools("build", "forever", "read_note", "roots", "trace", "twice", "wait_for_user", "whoami")
		return h.call("read_note", map[string]any{"file": "today.txt"})
	}
	t.Run("granted", func(t *testing.T) {
		t.Parallel()
		res := read(t, `sandbox {
  plugin "askplugin" {
    dir "notes" { path = "`+notes+`" }
  }
}
`)
		if got := text(res); res.IsError || got != "buy milk" {
			t.Errorf("read_note = %q (isError %v), want the note", got, res.IsError)
		}
	})
	t.Run("not granted", func(t *testing.T) {
		t.Parallel()
		res := read(t, "")
		got := text(res)
		if !res.IsError || !strings.Contains(got, `sandbox { plugin "askplugin" { dir "notes" { path = `) {
			t.Errorf("read_note = %q (isError %v), want an error saying how to grant the directory", got, res.IsError)
		}
	})
}
