package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/plughost/plughost/host/config"
)

// TestStarterParses: what plughost init writes is a valid configuration
// as it is, with lazy start.
func TestStarterParses(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte(config.Starter), "plughost.hcl")
	if err != nil {
		t.Fatalf("the starter configuration: %v", err)
	}
	if cfg.Plugins.Start != "lazy" {
		t.Errorf("start = %q, want lazy", cfg.Plugins.Start)
	}
}

// TestWritePath: --config, else $PLUGHOST_CONFIG, else the default
// location; made absolute.
func TestWritePath(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	cwd, _ := os.Getwd()
	tests := map[string]struct {
		flag      string
		env       map[string]string
		want, err string
	}{
		"flag":          {flag: "/a/p.hcl", env: map[string]string{config.EnvConfig: "/b/p.hcl"}, want: "/a/p.hcl"},
		"relative flag": {flag: "p.hcl", want: filepath.Join(cwd, "p.hcl")},
		"variable":      {env: map[string]string{config.EnvConfig: "/b/p.hcl", "HOME": "/h"}, want: "/b/p.hcl"},
		"default":       {env: map[string]string{"HOME": "/h"}, want: "/h/.config/plughost/plughost.hcl"},
		"nowhere":       {env: map[string]string{}, err: "neither XDG_CONFIG_HOME nor HOME is set: pass --config FILE"},
	}
	for name, tc := range tests {
		got, err := config.WritePath(tc.flag, env(tc.env))
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) || got != tc.want {
			t.Errorf("%s: WritePath = %q, %v; want %q, %q", name, got, err, tc.want, tc.err)
		}
	}
}

// TestWriteStarter: a missing file is written (its directory made); an
// existing one is kept unless force.
func TestWriteStarter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "plughost.hcl")
	steps := []struct {
		force, wrote bool
		content      string
	}{
		{false, true, config.Starter},
		{false, false, "mine\n"},
		{true, true, config.Starter},
	}
	for i, s := range steps {
		if i == 1 {
			if err := os.WriteFile(path, []byte("mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		wrote, err := config.WriteStarter(path, s.force)
		b, _ := os.ReadFile(path)
		if err != nil || wrote != s.wrote || string(b) != s.content {
			t.Errorf("step %d (force %v): wrote %v, %v, content %q; want %v", i, s.force, wrote, err, b, s.wrote)
		}
	}
}
