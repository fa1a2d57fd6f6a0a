package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHooksWiredE2E: plughost serve builds the hooks block into the
// catalog's path: a hook whose plugin cannot answer (none is installed)
// refuses the calls its match selects under on_error = "refuse", naming
// the hook, and is passed over under on_error = "pass"; each failure is
// an audit line. (The hook plugins themselves, answering through the
// contract, are tested with the contract's test plugin.)
func TestHooksWiredE2E(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plughost.hcl")
	if err := os.WriteFile(cfg, []byte(`hooks {
  hook "guard" {
    plugin = "absent-guard"
    on     = ["before_call"]
    match  = "item.name == 'echo' && arguments.text == 'guarded'"
  }
  hook "lenient" {
    plugin   = "absent-redactor"
    on       = ["after_call"]
    on_error = "pass"
    timeout  = "50ms"
  }
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(dir, "audit.jsonl")
	h := startTestHostWith(t, []string{"--config", cfg, "--audit-log", audit}, "echo")
	h.awaitTools("echo", "sleep")
	for _, plugin := range []string{"absent-guard", "absent-redactor"} {
		if log := h.stderr.String(); !strings.Contains(log, "a hook names a plugin that is not in the plugin directory") || !strings.Contains(log, "plugin="+plugin) {
			t.Errorf("the log does not warn that hook plugin %s is missing:\n%s", plugin, log)
		}
	}
	res := h.call("echo", map[string]any{"text": "guarded"})
	if got := text(res); !res.IsError || !strings.HasPrefix(got, `refused by hook "guard": it failed (`) || !strings.Contains(got, "its on_error is refuse") {
		t.Errorf("a guarded call: %q (isError %v), want the hook's refusal", got, res.IsError)
	}
	res = h.call("echo", map[string]any{"text": "hi"})
	if got := text(res); res.IsError || !strings.Contains(got, "hi") {
		t.Errorf("an unguarded call: %q (isError %v), want echo's answer (the failing after_call hook passes)", got, res.IsError)
	}
	h.close()
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"event":"hook","hook":"guard","point":"before_call","kind":"tool","item":"echo","provider":"echo","decision":"error"`,
		`"event":"hook","hook":"lenient","point":"after_call","kind":"tool","item":"echo","provider":"echo","decision":"error"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the audit log lacks %s:\n%s", want, b)
		}
	}
}
