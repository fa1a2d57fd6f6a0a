package preflight

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plughost check with a plugin directory: each declared server's secret
// sources exist and are granted by its sandbox block; a problem is at the
// declaration's file, with the fix. A declaration that does not load is
// one too.
func TestCheckDeclarations(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	write := func(path, content string, mode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	secrets := filepath.Join(base, "secrets")
	token := write(filepath.Join(secrets, "token"), "s3cret\n", 0o600)
	plugins := filepath.Join(base, "plugins")
	decl := func(name, json string) string {
		return write(filepath.Join(plugins, name+".mcp.json"), json, 0o644)
	}
	decl("granted", `{"url": "https://api.example.com/mcp", "bearer_token_file": "`+token+`"}`)
	ungranted := decl("ungranted", `{"url": "https://api.example.com/mcp", "bearer_token_file": "`+token+`"}`)
	unset := decl("unset", `{"url": "https://api.example.com/mcp", "bearer_token_env": "EXAMPLE_TOKEN"}`)
	envFiles := decl("envfiles", `{"command": "/bin/true", "env_files": {"API_KEY": "`+secrets+`/missing"}}`)
	broken := decl("broken", `{"command": "/bin/true", "url": "https://x"}`)
	write(filepath.Join(plugins, "README.txt"), "not a declaration", 0o644)
	config := write(filepath.Join(base, "plughost.hcl"), `sandbox {
  plugin "granted" {
    allow_read = ["`+secrets+`"]
  }
  plugin "envfiles" {
    allow_read = ["`+secrets+`"]
  }
}
`, 0o644)
	rep := Check(&Options{Config: config, Plugins: plugins, Getenv: func(string) string { return "" }})
	want := []struct{ where, what, fix string }{
		{broken, "", "correct the declaration"},
		{envFiles, "env_files: API_KEY: open " + secrets + "/missing: no such file", "create the file"},
		{ungranted, `bearer_token_file ` + token + ` is not granted to server "ungranted"`, `add allow_read = ["` + token + `"] to sandbox { plugin "ungranted" { ... } } in ` + config},
		{unset, "bearer_token_env: $EXAMPLE_TOKEN is empty or unset", "export $EXAMPLE_TOKEN in serve's environment"},
		{unset, `bearer_token_env EXAMPLE_TOKEN is not granted to server "unset"`, `add env = ["EXAMPLE_TOKEN"] to sandbox { plugin "unset" { ... } } in ` + config},
	}
	if len(rep.Problems) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(rep.Problems), len(want), rep.Problems)
	}
	for i, w := range want {
		p := rep.Problems[i]
		if p.Where != w.where || !strings.Contains(p.What, w.what) || !strings.Contains(p.Fix, w.fix) {
			t.Errorf("problem %d = %q, want at %s %q, fix %q", i, p, w.where, w.what, w.fix)
		}
	}
	// serve's preflight leaves the directory alone: such a server alone fails.
	if rep := Check(&Options{Config: config, Getenv: func(string) string { return "" }}); len(rep.Problems) != 0 {
		t.Errorf("without Options.Plugins: %v", rep.Problems)
	}
}
