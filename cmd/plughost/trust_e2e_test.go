package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/trust"
)

// plughostCmd runs a plughost command as an operator would, with its own
// XDG directories, and returns its stdout and stderr together, and its
// exit code.
func plughostCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, errOut, code := plughostRun(t, args...)
	return out + errOut, code
}

// plughostRun is plughostCmd with stdout and stderr apart.
func plughostRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin.plughost, args...)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("plughost %s: %v", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// TestTrustPinnedEndToEnd follows the pinned flow through a real MCP
// client: unapproved plugins are quarantined (listed by plughost plugins
// with their digest, served to no client); plughost approve serves one
// without a restart (the client is told list_changed); a changed binary
// is quarantined again; plughost revoke withdraws it; each change is in
// the audit log.
func TestTrustPinnedEndToEnd(t *testing.T) {
	t.Parallel()
	dir, state := t.TempDir(), t.TempDir()
	copyPlugin(t, "echo", dir, "echo")
	copyPlugin(t, "clock", dir, "clock")
	trustFile := filepath.Join(state, "trust.json")
	auditFile := filepath.Join(state, "audit.jsonl")
	config := filepath.Join(state, "plughost.hcl")
	if err := os.WriteFile(config, []byte(`trust {
  mode = "pinned"
  file = "trust.json"
}
audit {
  file = "audit.jsonl"
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	echoDigest, err := trust.Digest(filepath.Join(dir, "echo"))
	if err != nil {
		t.Fatal(err)
	}

	out, code := plughostCmd(t, "plugins", "--plugins", dir, "--config", config)
	if code != 1 || !strings.Contains(out, "2 plugins quarantined") ||
		!regexp.MustCompile(`(?m)^echo +quarantined +not approved \(plughost approve echo\)$`).MatchString(out) ||
		!strings.Contains(out, "  trust: pinned, pending, "+echoDigest+"\n") {
		t.Fatalf("plughost plugins before approval (exit %d):\n%s", code, out)
	}

	h := startTestHostIn(t, dir, []string{"--config", config})
	h.awaitTools() // nothing is served
	h.stderr.await(t, "plugin=echo state=pending")

	out, code = plughostCmd(t, "approve", "echo", "--plugins", dir, "--config", config, "--digest", echoDigest)
	if code != 0 || !strings.Contains(out, "approved echo ("+filepath.Join(dir, "echo")+", "+echoDigest+") in "+trustFile) {
		t.Fatalf("plughost approve (exit %d):\n%s", code, out)
	}
	h.awaitTools("echo", "sleep") // served without a restart
	if res := h.call("echo", map[string]any{"text": "trusted"}); text(res) != "trusted" {
		t.Fatalf("echo = %q", text(res))
	}

	copyPlugin(t, "clock", dir, "echo") // the file changes: quarantined again
	h.awaitTools()
	h.stderr.await(t, "plugin=echo state=changed")
	out, code = plughostCmd(t, "approve", "echo", "--plugins", dir, "--config", config, "--digest", echoDigest)
	if code != 1 || !strings.Contains(out, "it changed since it was reviewed; nothing approved") {
		t.Fatalf("approving a digest that is not the file's (exit %d):\n%s", code, out)
	}
	if out, code = plughostCmd(t, "approve", "echo", "--plugins", dir, "--config", config); code != 0 {
		t.Fatalf("plughost approve (exit %d):\n%s", code, out)
	}
	h.awaitTools("get_current_time") // the clock binary, approved under the name echo

	if out, code = plughostCmd(t, "revoke", "echo", "--config", config); code != 0 || !strings.Contains(out, "revoked echo") {
		t.Fatalf("plughost revoke (exit %d):\n%s", code, out)
	}
	h.awaitTools()
	h.stderr.await(t, "plugin=echo state=revoked")
	if out, code = plughostCmd(t, "revoke", "echo", "--config", config); code != 1 || !strings.Contains(out, "echo is not approved") {
		t.Fatalf("revoking twice (exit %d):\n%s", code, out)
	}
	h.close()

	b, err := os.ReadFile(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for line := range strings.Lines(string(b)) {
		var l struct{ Event, Plugin, From, State string }
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if l.Event == "trust" && l.Plugin == "echo" {
			got = append(got, l.From+"→"+l.State)
		}
	}
	want := []string{"→pending", "pending→approved", "approved→changed", "changed→approved", "approved→revoked"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("echo's trust lines in the audit log (-want +got):\n%s\n%s", diff, b)
	}
}

// TestTrustRequestedVersusGranted: plughost plugins shows what a plugin
// asks for next to what its policy does not grant — a plugin through the
// contract (Plugin.Request) and a declared server, quarantined, through
// its declaration — and a plugin runs with its grant only.
func TestTrustRequestedVersusGranted(t *testing.T) {
	t.Parallel()
	dir, state := t.TempDir(), t.TempDir()
	copyPlugin(t, "askplugin", dir, "askplugin")
	decl := `{"command": "/bin/false", "requests": {"read": ["/srv/notes"], "net": ["api.acme.com:443"], "env": ["ACME_TOKEN"]}}`
	if err := os.WriteFile(filepath.Join(dir, "notes.mcp.json"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(state, "plughost.hcl")
	if err := os.WriteFile(config, []byte(`sandbox {
  plugin "askplugin" {
    allow_net = ["localhost:443"]
  }
  plugin "notes" {
    env = ["ACME_TOKEN"]
  }
}
trust {
  file = "trust.json"
  plugin "notes" {
    mode = "pinned"
  }
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := plughostCmd(t, "plugins", "--plugins", dir, "--config", config)
	for _, want := range []string{
		`(?m)^askplugin +running .*\n  asks for: net localhost:443; env ASKPLUGIN_TOKEN\n  NOT GRANTED \(it runs without\): env ASKPLUGIN_TOKEN\n`,
		`(?m)^notes +quarantined +not approved \(plughost approve notes\)\n  \(declared server: /bin/false\)\n  trust: pinned, pending, sha256:[0-9a-f]{64}\n` +
			`  asks for: read /srv/notes; net api\.acme\.com:443; env ACME_TOKEN\n  NOT GRANTED \(it runs without\): read /srv/notes; net api\.acme\.com:443\n`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("plughost plugins does not match %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1 (a plugin is quarantined)", code)
	}

	out, _, _ = plughostRun(t, "plugins", "--plugins", dir, "--config", config, "--json")
	var r struct {
		Quarantined int
		Plugins     []struct {
			Name       string
			State      string
			Trust      *struct{ Mode, State, Digest string }
			Requests   map[string][]string
			NotGranted map[string][]string
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if r.Quarantined != 1 || len(r.Plugins) != 2 {
		t.Fatalf("--json: %s", out)
	}
	ask, notes := r.Plugins[0], r.Plugins[1]
	if diff := cmp.Diff(map[string][]string{"env": {"ASKPLUGIN_TOKEN"}}, ask.NotGranted); diff != "" || ask.Trust != nil {
		t.Errorf("askplugin (-want +got):\n%s\n%s", diff, out)
	}
	if notes.Trust == nil || notes.Trust.Mode != "pinned" || notes.Trust.State != "pending" || !strings.HasPrefix(notes.Trust.Digest, "sha256:") ||
		len(notes.Requests["read"]) != 1 || len(notes.NotGranted["env"]) != 0 {
		t.Errorf("notes: %+v\n%s", notes, out)
	}
}
