package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseHooks(t *testing.T) {
	t.Parallel()
	src := `hooks {
  hook "secrets" {
    plugin   = "secrets"
    on       = ["before_call", "after_call"]
    match    = "item.plugin != 'vault' && !caller.local"
    mode     = "permissive"
    on_error = "pass"
    timeout  = "50ms"
  }
  hook "defs" {
    plugin = "definitions"
    on     = ["on_definitions"]
  }
}
`
	cfg, err := Parse([]byte(src), "plughost.hcl")
	if err != nil {
		t.Fatal(err)
	}
	want := []Hook{
		{Name: "secrets", Plugin: "secrets", On: []string{"before_call", "after_call"}, Match: "item.plugin != 'vault' && !caller.local",
			Mode: "permissive", OnError: "pass", Timeout: 50 * time.Millisecond},
		{Name: "defs", Plugin: "definitions", On: []string{"on_definitions"}, Mode: "enforce", OnError: "refuse", Timeout: 200 * time.Millisecond},
	}
	if diff := cmp.Diff(want, cfg.Hooks); diff != "" {
		t.Errorf("hooks (-want +got):\n%s", diff)
	}
	if cfg, err := Parse([]byte("hooks {}\n"), "plughost.hcl"); err != nil || cfg.Hooks == nil || len(cfg.Hooks) != 0 {
		t.Errorf("an empty hooks block: %v, %#v", err, cfg)
	}
}

func TestParseHooksErrors(t *testing.T) {
	t.Parallel()
	hook := func(body string) string { return "hooks {\n  hook \"h\" {\n" + body + "\n  }\n}\n" }
	for name, c := range map[string]struct{ src, want string }{
		"no plugin":       {hook(`on = ["before_call"]`), `"plugin" is required`},
		"bad plugin":      {hook(`plugin = "a b"` + "\n" + `on = ["before_call"]`), `hook "h": plugin must be the provider name`},
		"no on":           {hook(`plugin = "p"`), `"on" is required`},
		"empty on":        {hook(`plugin = "p"` + "\n" + `on = []`), `on must be a list of hook points, at least one`},
		"unknown point":   {hook(`plugin = "p"` + "\n" + `on = ["before_cal"]`), `not "before_cal"`},
		"twice":           {hook(`plugin = "p"` + "\n" + `on = ["after_call", "after_call"]`), `on names "after_call" twice`},
		"mode":            {hook(`plugin = "p"` + "\n" + `on = ["after_call"]` + "\n" + `mode = "audit"`), `mode must be one of "enforce", "permissive", "off"`},
		"on_error":        {hook(`plugin = "p"` + "\n" + `on = ["after_call"]` + "\n" + `on_error = "ignore"`), `on_error must be one of "refuse", "pass"`},
		"timeout low":     {hook(`plugin = "p"` + "\n" + `on = ["after_call"]` + "\n" + `timeout = "500us"`), `timeout must be from 1ms to 1m, not 500µs`},
		"timeout high":    {hook(`plugin = "p"` + "\n" + `on = ["after_call"]` + "\n" + `timeout = "2m"`), `timeout must be from 1ms to 1m`},
		"match syntax":    {hook(`plugin = "p"` + "\n" + `on = ["after_call"]` + "\n" + `match = "item.plugin =="`), `plughost.hcl:5:`},
		"match field":     {hook(`plugin = "p"` + "\n" + `on = ["after_call"]` + "\n" + `match = "item.provider == 'x'"`), `undefined field 'provider'`},
		"match not bool":  {hook(`plugin = "p"` + "\n" + `on = ["after_call"]` + "\n" + `match = "item.plugin"`), `must be true or false`},
		"unknown setting": {hook(`plugin = "p"` + "\n" + `on = ["after_call"]` + "\n" + `priority = 1`), `An argument named "priority" is not expected here`},
		"duplicate": {"hooks {\n  hook \"h\" {\n plugin = \"p\"\n on = [\"after_call\"]\n }\n  hook \"h\" {\n plugin = \"q\"\n on = [\"after_call\"]\n }\n}\n",
			"two hooks are named h"},
		"bad name":    {"hooks {\n  hook \"a b\" {\n plugin = \"p\"\n on = [\"after_call\"]\n }\n}\n", `hook "a b": a hook's name is 1 to 32`},
		"two blocks":  {"hooks {}\nhooks {}\n", "Duplicate hooks block"},
		"stray block": {"hooks {\n  rule \"x\" {}\n}\n", `Blocks of type "rule" are not expected here`},
		"many hooks":  {"hooks {\n" + strings.Repeat("  hook \"h\" {\n plugin = \"p\"\n on = [\"after_call\"]\n }\n", 65) + "}\n", "at most 64 hooks"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(c.src), "plughost.hcl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
