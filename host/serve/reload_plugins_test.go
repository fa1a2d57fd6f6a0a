package serve

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/trust"
)

// reloadWait bounds each wait of the reload tests: plugins are real
// processes on a possibly loaded machine.
const reloadWait = time.Minute

// buildPlugins builds plugins/echo and the end-to-end tests' hook plugin
// (cmd/plughost/internal/hookplugin) into dir.
func buildPlugins(t *testing.T, dir string) {
	t.Helper()
	for name, pkg := range map[string]string{"echo": "../../plugins/echo", "hookplugin": "../../cmd/plughost/internal/hookplugin"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
}

// reloadHost is a serving host over echo and hookplugin, and how to
// reload its configuration.
type reloadHost struct {
	t    *testing.T
	h    *Host
	path string // the configuration file
	cur  *config.Config
	log  *lockedBuffer
}

// base is what every configuration of the test starts with: plugins
// started at once, no catalog cache, no sandbox (the reload is under
// test, not the sandbox; its policies still decide the fingerprint).
const reloadBase = `plugins {
  start = "eager"
  cache = false
}
`

// reloadSandbox is the sandbox block of the test's configurations, with
// plugin blocks inside it.
func reloadSandbox(plugins string) string { return "sandbox {\n  disabled = true\n" + plugins + "}\n" }

func startReloadHost(t *testing.T) *reloadHost {
	t.Helper()
	dir := t.TempDir()
	buildPlugins(t, dir) // before XDG_CACHE_HOME moves: it holds go's build cache
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	r := &reloadHost{t: t, path: filepath.Join(t.TempDir(), "plughost.hcl"), log: &lockedBuffer{}}
	r.write(reloadBase + reloadSandbox(""))
	h, err := Start(&Options{Plugins: dir, Workspace: t.TempDir(), Config: r.path, Serving: true, LogLevel: "debug", Version: "test"}, r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.h = h
	t.Cleanup(func() {
		h.Stop()
		if t.Failed() || testing.Verbose() {
			t.Log(r.log.String())
		}
	})
	select {
	case <-h.Manager().Ready():
	case <-time.After(reloadWait):
		t.Fatal("the plugins did not load")
	}
	r.cur = r.load()
	return r
}

func (r *reloadHost) write(hcl string) {
	r.t.Helper()
	if err := os.WriteFile(r.path, []byte(hcl), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

func (r *reloadHost) load() *config.Config {
	r.t.Helper()
	cfg, err := LoadConfig(r.path)
	if err != nil {
		r.t.Fatal(err)
	}
	return cfg
}

// reload writes hcl (after reloadBase and the sandbox block with
// sandboxPlugins) as the configuration and applies it with
// reloadPlugins, as the reload core does.
func (r *reloadHost) reload(sandboxPlugins, hcl string) {
	r.t.Helper()
	r.write(reloadBase + reloadSandbox(sandboxPlugins) + hcl)
	next := r.load()
	if err := r.h.reloadPlugins(r.cur, next); err != nil {
		r.t.Fatalf("reloadPlugins: %v", err)
	}
	r.cur = next
}

func (r *reloadHost) status(name string) manager.PluginStatus {
	for _, s := range r.h.Manager().Status() {
		if s.Name == name {
			return s
		}
	}
	r.t.Fatalf("no plugin %s", name)
	return manager.PluginStatus{}
}

// await polls the plugin's status until cond holds: the manager has no
// event a test outside it can await for a state.
func (r *reloadHost) await(name, what string, cond func(manager.PluginStatus) bool) manager.PluginStatus {
	r.t.Helper()
	deadline := time.Now().Add(reloadWait)
	for {
		st := r.status(name)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s never %s: %+v", name, what, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// echo calls echo with text through the catalog, as a client's call
// reaches it, and returns its text, or the refusal.
func (r *reloadHost) echo(text string) (string, error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), reloadWait)
	defer cancel()
	args, _ := json.Marshal(map[string]string{"text": text})
	res, err := r.h.Catalog().CallTool(ctx, &tool.Call{Name: "echo", Arguments: args})
	if err != nil {
		return "", err
	}
	var out struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(res, &out); err != nil || len(out.Content) != 1 {
		r.t.Fatalf("echo's result %s (%v)", res, err)
	}
	if out.IsError {
		return "", errors.New(out.Content[0].Text)
	}
	return out.Content[0].Text, nil
}

// TestReloadPlugins: a serving host's plugins take a new configuration
// without a restart of the host. A hooks block added takes effect at the
// next call, restarting no plugin; a sandbox policy changed restarts that
// plugin only; a trust block turned to pinned holds the unapproved
// plugins (quarantined, their tools withdrawn) and watches its own trust
// file (an approval written there starts the plugin), and back to open
// runs them all again.
func TestReloadPlugins(t *testing.T) {
	r := startReloadHost(t)
	echoPID, hookPID := r.status("echo").PID, r.status("hookplugin").PID
	if got, err := r.echo("a secret plan"); err != nil || got != "a secret plan" {
		t.Fatalf("echo before any hook = %q, %v", got, err)
	}

	const hooks = `hooks {
  hook "refuse_word" {
    plugin = "hookplugin"
    on     = ["before_call"]
  }
}
`
	r.reload("", hooks)
	if _, err := r.echo("a secret plan"); err == nil || !strings.Contains(err.Error(), `refused by hook "refuse_word"`) {
		t.Errorf("echo of a secret after the hooks block was added: %v, want the hook's refusal", err)
	}
	if got, err := r.echo("hi"); err != nil || got != "hi" {
		t.Errorf("echo of hi under the new hook = %q, %v", got, err)
	}
	if e, hp := r.status("echo").PID, r.status("hookplugin").PID; e != echoPID || hp != hookPID {
		t.Errorf("pids after the hooks reload: echo %d (was %d), hookplugin %d (was %d); want both kept", e, echoPID, hp, hookPID)
	}

	const policy = `  plugin "echo" {
    env = ["ECHO_RELOADED"]
  }
`
	r.reload(policy, hooks)
	st := r.await("echo", "restarted under its new policy", func(st manager.PluginStatus) bool {
		return st.State == manager.StateRunning && st.PID != 0 && st.PID != echoPID
	})
	if hp := r.status("hookplugin").PID; hp != hookPID {
		t.Errorf("hookplugin's pid %d after echo's policy changed, want %d: its own did not", hp, hookPID)
	}
	if got, err := r.echo("hi"); err != nil || got != "hi" {
		t.Errorf("echo after its restart = %q, %v", got, err)
	}
	echoPID = st.PID

	trustFile := filepath.Join(t.TempDir(), "trust.json")
	pinned := `trust {
  mode = "pinned"
  file = "` + trustFile + `"
}
`
	r.reload(policy, hooks+pinned)
	for _, name := range []string{"echo", "hookplugin"} {
		r.await(name, "quarantined", func(st manager.PluginStatus) bool { return st.State == manager.StateQuarantined })
	}
	if _, err := r.echo("hi"); err == nil {
		t.Error("echo answered while its plugin is held by trust mode pinned")
	}
	// The new trust file is the one watched now: an approval written
	// there starts echo, without a reload.
	digest, err := trust.Digest(r.status("echo").Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := trust.Update(trustFile, func(f *trust.File) error {
		f.Plugins["echo"] = trust.Entry{Digest: digest, ApprovedAt: time.Now().UTC(), ApprovedBy: "test"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r.await("echo", "started once approved in the new trust file", func(st manager.PluginStatus) bool { return st.State == manager.StateRunning })
	if st := r.status("hookplugin"); st.State != manager.StateQuarantined {
		t.Errorf("hookplugin is %s after echo's approval, want still quarantined", st.State)
	}
	r.reload(policy, hooks)
	for _, name := range []string{"echo", "hookplugin"} {
		r.await(name, "running again in mode open", func(st manager.PluginStatus) bool { return st.State == manager.StateRunning })
	}
	if got, err := r.echo("hi"); err != nil || got != "hi" {
		t.Errorf("echo back in mode open = %q, %v", got, err)
	}
	if !strings.Contains(r.log.String(), "the plugins' configuration reloaded") {
		t.Error("no log line of the reload")
	}
}
