package manager

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/override"
	"github.com/plughost/plughost/host/tool"
)

// policies stands in for the host's sandbox block: each plugin's policy
// by name, which the Launcher hands the process as POLICY (as the
// sandbox applies a policy at launch) and the Fingerprint digests (as
// the host's launchFingerprint does). A reload changes it, then calls
// Reconfigure.
type policies struct {
	mu sync.Mutex
	by map[string]string
}

func (p *policies) get(name string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.by[name]
}

func (p *policies) set(name, v string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.by[name] = v
}

// options sets o's Fingerprint and Launcher from p.
func (p *policies) options(o *Options) *Options {
	o.Fingerprint = p.get
	o.Launcher = func(name string, cmd *exec.Cmd) (*Launch, error) {
		cmd.Env = append(cmd.Env, "POLICY="+p.get(name))
		return &Launch{Cmd: cmd}, nil
	}
	return o
}

// awaitSettled waits for Reconfigure's settled channel.
func awaitSettled(t *testing.T, settled <-chan struct{}) {
	t.Helper()
	select {
	case <-settled:
	case <-time.After(waitLong):
		t.Fatal("the plugins Reconfigure restarted did not settle")
	}
}

// TestReconfigureRestartsOnlyWhosePolicyChanged: of two running plugins,
// a reload that changes one's policy restarts that one only, under its
// new policy (a new process, published before the old one stops), while
// a call in flight on its old process completes there; the other keeps
// its process and hears nothing. A reload that changes nothing restarts
// nothing.
func TestReconfigureRestartsOnlyWhosePolicyChanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginEcho, filepath.Join(dir, "echo"), 0o755)
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	pol := &policies{by: map[string]string{"echo": "p1", "tp": "p1"}}
	var mu sync.Mutex
	started := map[string]int{} // EventStarted by plugin
	opts := pol.options(&Options{StopTimeout: waitLong, OnEvent: func(name string, e Event) {
		if e == EventStarted {
			mu.Lock()
			started[name]++
			mu.Unlock()
		}
	}})
	h := start(t, dir, *opts)
	published := map[string]tool.Provider{}
	for range 2 {
		e := h.next()
		if e.op != "set" {
			t.Fatalf("Publisher call %s %s, want a set", e.op, e.name)
		}
		published[e.name] = e.p
	}
	h.ready()
	echoPID, tpPID := h.status("echo").PID, h.status("tp").PID
	if got := mustCall(t, published["tp"], "env", `{"name":"POLICY"}`); got != "p1" {
		t.Fatalf("tp's POLICY = %q, want p1", got)
	}

	if restarted, settled := h.m.Reconfigure(); len(restarted) != 0 {
		t.Errorf("Reconfigure with no change restarted %v", restarted)
	} else {
		awaitSettled(t, settled)
	}

	// A call in flight on echo's process, which has begun (its first
	// progress notification came).
	progress := make(chan tool.Progress, 100)
	type outcome struct {
		res json.RawMessage
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := published["echo"].CallTool(context.Background(), &tool.Call{
			Name: "sleep", Arguments: json.RawMessage(`{"ms":1500}`), Progress: func(p tool.Progress) { progress <- p },
		})
		done <- outcome{res, err}
	}()
	select {
	case <-progress:
	case <-time.After(waitLong):
		t.Fatal("no progress from sleep")
	}

	pol.set("echo", "p2")
	restarted, settled := h.m.Reconfigure()
	if !slices.Equal(restarted, []string{"echo"}) {
		t.Fatalf("Reconfigure restarted %v, want [echo]", restarted)
	}
	e := h.expect("set", "echo") // the new process, published
	awaitSettled(t, settled)
	if pid := h.status("echo").PID; pid == echoPID || pid == 0 {
		t.Errorf("echo's pid after its policy changed = %d, want a new process (was %d)", pid, echoPID)
	}
	if got := mustCall(t, e.p, "echo", `{"text":"hi"}`); got != "hi" {
		t.Errorf("echo on the new process = %q", got)
	}
	select {
	case o := <-done:
		if o.err != nil || !strings.Contains(string(o.res), `"content"`) || strings.Contains(string(o.res), `"isError":true`) {
			t.Errorf("the call in flight across the restart = %s, %v; want its result", o.res, o.err)
		}
	case <-time.After(waitLong):
		t.Fatal("the call in flight did not finish")
	}
	eventually(t, "echo's old process to stop", func() bool { return !alive(echoPID) })

	// tp was not touched: same process, no publication, one start.
	if pid := h.status("tp").PID; pid != tpPID {
		t.Errorf("tp's pid = %d, want %d: its policy did not change", pid, tpPID)
	}
	h.noEvent()
	mu.Lock()
	if started["tp"] != 1 || started["echo"] != 2 {
		t.Errorf("processes started %v, want tp 1 and echo 2", started)
	}
	mu.Unlock()

	// Its own change restarts tp under its new policy.
	pol.set("tp", "p3")
	restarted, settled = h.m.Reconfigure()
	if !slices.Equal(restarted, []string{"tp"}) {
		t.Fatalf("Reconfigure restarted %v, want [tp]", restarted)
	}
	e = h.expect("set", "tp")
	awaitSettled(t, settled)
	if got := mustCall(t, e.p, "env", `{"name":"POLICY"}`); got != "p3" {
		t.Errorf("tp's POLICY after the reload = %q, want p3", got)
	}
}

// TestReconfigureLeavesAnIdlePluginIdle: a lazy plugin stopped for idle
// is not started by a change of its policy; its next start, on demand,
// runs under the new one.
func TestReconfigureLeavesAnIdlePluginIdle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	pol := &policies{by: map[string]string{"tp": "p1"}}
	h := start(t, dir, *pol.options(&Options{Start: StartLazy, IdleTimeout: 50 * time.Millisecond, CacheDir: t.TempDir()}))
	e := h.expect("set", "tp") // started once to learn its definitions
	h.logs.await(t, "test", "stopping the idle plugin")
	eventually(t, "tp to be idle", func() bool { return h.status("tp").State == StateIdle })

	pol.set("tp", "p2")
	restarted, settled := h.m.Reconfigure()
	if len(restarted) != 0 {
		t.Errorf("Reconfigure restarted %v, want none: tp is idle", restarted)
	}
	awaitSettled(t, settled)
	if st := h.status("tp"); st.State != StateIdle {
		t.Errorf("tp's state after the reload = %s, want idle", st.State)
	}
	if got := mustCall(t, e.p, "env", `{"name":"POLICY"}`); got != "p2" {
		t.Errorf("tp's POLICY when started on demand after the reload = %q, want p2", got)
	}
}

// TestSetOverridesShownAtRecheck: new override blocks apply to a running
// plugin's listing once Recheck shows it again, without a restart.
func TestSetOverridesShownAtRecheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginEcho, filepath.Join(dir, "echo"), 0o755)
	h := start(t, dir, Options{})
	e := h.expect("set", "echo")
	pid := h.status("echo").PID
	described := func(p tool.Provider) string {
		for _, d := range p.Tools() {
			if d.Name == "echo" {
				return description(t, d.JSON)
			}
		}
		return ""
	}
	ours := "Echoes, as the operator says."
	if got := described(e.p); got == ours {
		t.Fatalf("echo is described %q before any override", got)
	}
	h.m.SetOverrides(override.New([]config.Override{{Plugin: "echo", Kind: override.Tool, Name: "echo", Description: &ours}}))
	h.m.Recheck()
	e = h.expect("set", "echo")
	if got := described(e.p); got != ours {
		t.Errorf("echo is described %q after the override, want %q", got, ours)
	}
	if got := h.status("echo").PID; got != pid {
		t.Errorf("echo's pid = %d, want %d: an override restarts nothing", got, pid)
	}
}
