package preflight

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plughost check with a plugin directory names each hook whose plugin is
// not in it, at the hook's block, with what serve would do meanwhile.
func TestCheckHooks(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	plugins := filepath.Join(base, "plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plugins, "secrets"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(base, "plughost.hcl")
	if err := os.WriteFile(config, []byte(`hooks {
  hook "secrets" {
    plugin = "secrets"
    on     = ["before_call"]
  }
  hook "pii" {
    plugin   = "pii"
    on       = ["after_call"]
    on_error = "pass"
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := Check(&Options{Config: config, Plugins: plugins, Getenv: func(string) string { return "" }})
	if len(rep.Problems) != 1 {
		t.Fatalf("problems %v, want one: the pii hook's", rep.Problems)
	}
	p := rep.Problems[0]
	if p.Where != config+":6" || !strings.Contains(p.What, `hook "pii" names plugin "pii", which is not in `+plugins+`: it is skipped (on_error = "pass")`) ||
		!strings.Contains(p.Fix, "install the plugin") {
		t.Errorf("problem %+v", p)
	}
	if rep := Check(&Options{Config: config, Getenv: func(string) string { return "" }}); len(rep.Problems) != 0 {
		t.Errorf("without a plugin directory: %v", rep.Problems)
	}
}
