package mcpb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plughost/plughost/internal/mcpbcli"
)

// TestValidatesAsMcpbDoes: each manifest is judged by the real `mcpb
// validate` (2.1.2) and by ParseManifest; they must agree. The cases are
// the schema's: versions, required members, unknown members, enums,
// formats, types.
func TestValidatesAsMcpbDoes(t *testing.T) {
	t.Parallel()
	base := `{VERSION "name": "x", "version": "1.0.0", "description": "d", "author": {"name": "a"MORE},
  "server": {"type": "TYPE", "entry_point": "server/index.js", "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.js"]}}EXTRA}`
	for _, c := range []struct{ name, version, typ, more, extra string }{
		{"0.1 as dxt_version", `"dxt_version": "0.1",`, "node", "", ""},
		{"0.2", `"manifest_version": "0.2",`, "python", "", ""},
		{"0.3 with icons", `"manifest_version": "0.3",`, "binary", "", `, "icons": [{"src": "i.png", "size": "16x16"}]`},
		{"0.4 uv", `"manifest_version": "0.4",`, "uv", "", ""},
		{"icons before 0.3", `"manifest_version": "0.2",`, "node", "", `, "icons": [{"src": "i.png", "size": "16x16"}]`},
		{"uv before 0.4", `"manifest_version": "0.3",`, "uv", "", ""},
		{"no version", ``, "node", "", ""},
		{"unknown version", `"manifest_version": "1.0",`, "node", "", ""},
		{"unknown member", `"manifest_version": "0.3",`, "node", "", `, "colour": "red"`},
		{"unknown server type", `"manifest_version": "0.3",`, "deno", "", ""},
		{"author email", `"manifest_version": "0.3",`, "node", `, "email": "not an address"`, ""},
		{"homepage url", `"manifest_version": "0.3",`, "node", "", `, "homepage": "not a url"`},
		{"user_config without title", `"manifest_version": "0.3",`, "node", "", `, "user_config": {"k": {"type": "string", "description": "d"}}`},
		{"user_config type", `"manifest_version": "0.3",`, "node", "", `, "user_config": {"k": {"type": "color", "title": "t", "description": "d"}}`},
		{"platform", `"manifest_version": "0.3",`, "node", "", `, "compatibility": {"platforms": ["freebsd"]}`},
		{"prompt without text", `"manifest_version": "0.3",`, "node", "", `, "prompts": [{"name": "p"}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := strings.NewReplacer("VERSION", c.version, "TYPE", c.typ, "MORE", c.more, "EXTRA", c.extra).Replace(base)
			path := filepath.Join(t.TempDir(), "manifest.json")
			if err := os.WriteFile(path, []byte(m), 0o644); err != nil {
				t.Fatal(err)
			}
			out, mcpbErr := mcpbcli.Run(t, "validate", path)
			_, ours := ParseManifest([]byte(m))
			if (mcpbErr == nil) != (ours == nil) {
				t.Fatalf("mcpb validate: %v %s\nParseManifest: %v\nmanifest: %s", mcpbErr, out, ours, m)
			}
			t.Logf("mcpb: %v; ours: %v", strings.TrimSpace(out), ours)
		})
	}
}
