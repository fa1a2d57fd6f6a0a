package manager

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/tool"
)

func TestCrashDuringCallRestartsThePlugin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{BackoffInitial: 10 * time.Millisecond})
	e := h.expect("set", "tp")
	pid1 := mustPID(t, e.p)
	// A child holding the plugin's stderr must not keep the death unnoticed,
	// and must die with the plugin.
	child, err := strconv.Atoi(mustCall(t, e.p, "spawn", ""))
	if err != nil {
		t.Fatal(err)
	}

	_, err = call(t, e.p, "crash", "")
	if !errors.Is(err, tool.ErrGone) || !strings.Contains(err.Error(), `tool "crash" of provider "tp": plugin tp exited: exit status 3`) {
		t.Fatalf("call crash: error %v, want tool.ErrGone naming the exit", err)
	}
	// A call made once the death is seen, through the provider published
	// before it, waits for the restart (10ms away) and reaches the new
	// process.
	eventually(t, "the death to be seen", func() bool { return h.status("tp").PID != pid1 })
	if pid := mustPID(t, e.p); pid == pid1 {
		t.Errorf("a call during the restart reached pid %d, the dead process", pid)
	}
	e = h.expect("set", "tp") // the new process behind it: no remove between
	h.noEvent()
	if diff := cmp.Diff(v1Tools, e.tools); diff != "" {
		t.Errorf("tools after restart (-want +got):\n%s", diff)
	}
	pid2 := mustPID(t, e.p)
	if pid2 == pid1 || alive(pid1) {
		t.Errorf("after restart: pid %d (was %d, alive %v)", pid2, pid1, alive(pid1))
	}
	eventually(t, "the crashed plugin's child to die", func() bool { return !alive(child) })
	s := h.status("tp")
	if s.State != StateRunning || s.Restarts != 1 || !strings.Contains(s.LastError, "exited: exit status 3") {
		t.Errorf("status after restart = %+v", s)
	}
}

// A plugin that died stays published while it waits to restart: with a
// long delay, calls meanwhile are refused at once naming the exit, and its
// tools stay listed.
func TestCallsWhileRestartingNameTheCause(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{BackoffInitial: time.Hour, BackoffMax: time.Hour})
	e := h.expect("set", "tp")
	if _, err := call(t, e.p, "crash", ""); !errors.Is(err, tool.ErrGone) {
		t.Fatalf("call crash: error %v, want tool.ErrGone", err)
	}
	eventually(t, "the plugin to wait for its restart", func() bool { return h.status("tp").State == StateRestarting })
	_, err := call(t, e.p, "pid", "")
	const want = `tool "pid" of provider "tp": plugin tp exited (exit status 3) and restarts in 1h0m0s`
	if !errors.Is(err, tool.ErrRefused) || err.Error() != want {
		t.Errorf("call while restarting: %v, want tool.ErrRefused: %s", err, want)
	}
	if s := h.status("tp"); s.Tools != len(v1Tools) {
		t.Errorf("tools counted while restarting = %d, want %d", s.Tools, len(v1Tools))
	}
	h.noEvent() // not removed
}

func TestCallsAfterUnloadFail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	h := start(t, dir, Options{})
	e := h.expect("set", "tp")
	pid := mustPID(t, e.p)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	h.expect("remove", "tp")
	eventually(t, "the plugin to exit", func() bool { return !alive(pid) })
	_, err := call(t, e.p, "pid", "")
	if !errors.Is(err, tool.ErrRefused) || err.Error() != `tool "pid" of provider "tp": plugin tp was unloaded` {
		t.Errorf("call after unload: %v, want tool.ErrRefused saying it was unloaded", err)
	}
}

// A call that outlives the Launch's CallTimeout is cancelled in the plugin and
// fails with tool.ErrTimedOut saying so (an isError result for the client,
// through tool.Outcome); the plugin keeps serving.
func TestCallTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{
		Launcher: func(name string, cmd *exec.Cmd) (*Launch, error) {
			return &Launch{Cmd: cmd, CallTimeout: 200 * time.Millisecond}, nil
		},
	})
	e := h.expect("set", "tp")
	_, err := e.p.CallTool(context.Background(), &tool.Call{Name: "hang", Arguments: json.RawMessage(`{}`)})
	const want = `tool "hang" of plugin tp did not finish within its timeout of 200ms and was cancelled`
	if !errors.Is(err, tool.ErrTimedOut) || err.Error() != want {
		t.Errorf("hang: %v, want tool.ErrTimedOut: %s", err, want)
	}
	h.logs.await(t, "test.tp", "hang cancelled")
	if got := mustCall(t, e.p, "variant_v1", ""); got != "v1" {
		t.Errorf("after the timeout, variant_v1 = %q", got)
	}
}

// A call that goes on as a task is no longer bounded by the plugin's call
// timeout (the task's lifetime bounds it); the same call that stays
// synchronous is, and so is one whose Detach the protocol layer ignored
// (no task made).
func TestTaskOutlivesCallTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{
		Launcher: func(name string, cmd *exec.Cmd) (*Launch, error) {
			return &Launch{Cmd: cmd, CallTimeout: 200 * time.Millisecond}, nil
		},
	})
	e := h.expect("set", "tp")
	args := json.RawMessage(`{"MS":600}`)
	// The protocol layer makes the call a task when the plugin detaches it
	// (as host/mcp does), and runs what the provider registered then.
	var became func()
	c := &tool.Call{Name: "longjob", Arguments: args, Tasks: true, BecameTask: func(f func()) { became = f }}
	c.Detach = func() { became() }
	res, err := e.p.CallTool(context.Background(), c)
	if err != nil || !strings.Contains(string(res), "long job done") {
		t.Errorf("as a task: %s, %v, want its result past the timeout", res, err)
	}
	// A job far longer than the limit: only the limit can end these calls
	// (600 ms left a margin a loaded CI machine's timer once overran).
	endless := json.RawMessage(`{"MS":600000}`)
	_, err = e.p.CallTool(context.Background(), &tool.Call{Name: "longjob", Arguments: endless})
	if !errors.Is(err, tool.ErrTimedOut) {
		t.Errorf("synchronous: %v, want tool.ErrTimedOut", err)
	}
	ignored := &tool.Call{Name: "longjob", Arguments: endless, Tasks: true, BecameTask: func(func()) {}, Detach: func() {}}
	if _, err = e.p.CallTool(context.Background(), ignored); !errors.Is(err, tool.ErrTimedOut) {
		t.Errorf("detached but no task made: %v, want tool.ErrTimedOut", err)
	}
}

// startCall is call through the provider's StartCall: it waits for done.
func startCall(t *testing.T, p tool.Provider, name string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	type answer struct {
		res json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	p.(tool.Starter).StartCall(ctx, &tool.Call{Name: name, Arguments: json.RawMessage(`{}`)}, func(res json.RawMessage, err error) {
		done <- answer{res, err}
	})
	a := <-done
	if a.err != nil {
		return "", a.err
	}
	var r struct{ Content []struct{ Text string } }
	if err := json.Unmarshal(a.res, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("call %s: result %s", name, a.res)
	}
	return r.Content[0].Text, nil
}

// A call started without waiting (StartCall, how stdio serves calls) gets
// the answers CallTool gets: its result, the timeout, a crash, an unloaded
// plugin, each with the same typed error and text.
func TestStartCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	h := start(t, dir, Options{
		BackoffInitial: 10 * time.Millisecond,
		Launcher: func(name string, cmd *exec.Cmd) (*Launch, error) {
			return &Launch{Cmd: cmd, CallTimeout: 200 * time.Millisecond}, nil
		},
	})
	e := h.expect("set", "tp")
	if got, err := startCall(t, e.p, "variant_v1"); err != nil || got != "v1" {
		t.Errorf("variant_v1 = %q, %v", got, err)
	}
	_, err := startCall(t, e.p, "hang")
	const timedOut = `tool "hang" of plugin tp did not finish within its timeout of 200ms and was cancelled`
	if !errors.Is(err, tool.ErrTimedOut) || err.Error() != timedOut {
		t.Errorf("hang: %v, want tool.ErrTimedOut: %s", err, timedOut)
	}
	_, err = startCall(t, e.p, "crash")
	if !errors.Is(err, tool.ErrGone) || !strings.Contains(err.Error(), `plugin tp exited: exit status 3`) {
		t.Errorf("crash: %v, want tool.ErrGone naming the exit", err)
	}
	e = h.expect("set", "tp")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	h.expect("remove", "tp")
	if _, err := startCall(t, e.p, "pid"); !errors.Is(err, tool.ErrRefused) {
		t.Errorf("after unload: %v, want tool.ErrRefused", err)
	}
}

// A handler's panic is the plugin's failure, not the tool's: the call
// fails with tool.ErrInternal naming the tool, the plugin and the panic
// (an isError result for a synchronous call, a failed task for a task),
// through CallTool and StartCall alike; the plugin lives on.
func TestPanicIsThePluginsFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{})
	e := h.expect("set", "tp")
	pid := mustPID(t, e.p)
	const want = `tool "panic" of plugin tp failed: tool "panic" panicked: boom`
	_, err := call(t, e.p, "panic", "")
	if !errors.Is(err, tool.ErrInternal) || err.Error() != want {
		t.Errorf("CallTool: %v, want tool.ErrInternal: %s", err, want)
	}
	_, err = startCall(t, e.p, "panic")
	if !errors.Is(err, tool.ErrInternal) || err.Error() != want {
		t.Errorf("StartCall: %v, want tool.ErrInternal: %s", err, want)
	}
	if got := mustPID(t, e.p); got != pid {
		t.Errorf("after the panics the plugin's pid is %d, was %d", got, pid)
	}
	h.noEvent()
}

// A call's offer of a task reaches the plugin, whose handler goes on as a
// task: Detach runs once, before the call's progress and its answer,
// through CallTool and StartCall alike; without the offer the plugin goes
// on synchronously and Detach never runs.
func TestCallGoesOnAsATask(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{})
	e := h.expect("set", "tp")
	for _, async := range []bool{false, true} {
		for _, tasks := range []bool{false, true} {
			var events []string
			c := &tool.Call{
				Name: "job", Arguments: json.RawMessage(`{}`), Tasks: tasks,
				Detach:   func() { events = append(events, "detach") },
				Progress: func(p tool.Progress) { events = append(events, p.Message) },
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			var (
				res json.RawMessage
				err error
			)
			if async {
				done := make(chan struct{})
				e.p.(tool.Starter).StartCall(ctx, c, func(r json.RawMessage, e error) { res, err = r, e; close(done) })
				<-done
			} else {
				res, err = e.p.CallTool(ctx, c)
			}
			cancel()
			if err != nil {
				t.Fatalf("StartCall %v, Tasks %v: %v", async, tasks, err)
			}
			events = append(events, string(res))
			want := []string{"working", string(tool.TextResult("task: " + strconv.FormatBool(tasks)))}
			if tasks {
				want = append([]string{"detach"}, want...)
			}
			if diff := cmp.Diff(want, events); diff != "" {
				t.Errorf("StartCall %v, Tasks %v (-want +got):\n%s", async, tasks, diff)
			}
		}
	}
}

// A plugin killed by a signal the host did not send while it starts (an
// operator's kill, the OOM killer) has died, as a running plugin can: it
// is restarted after its backoff, not left failed until its file changes.
func TestKilledWhileStartingIsRestarted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "hang")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	pids := make(chan int, 4)
	h := start(t, dir, Options{
		BackoffInitial: 10 * time.Millisecond,
		StartTimeout:   waitLong,
		Env:            []string{"TESTPLUGIN_HANG_IF=" + marker},
		Launcher: func(_ string, cmd *exec.Cmd) (*Launch, error) {
			return &Launch{Cmd: cmd, Started: func(pid int) ([]string, error) { pids <- pid; return nil, nil }}, nil
		},
	})
	pid := <-pids // hangs before its handshake
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	if p, err := os.FindProcess(pid); err != nil || p.Kill() != nil {
		t.Fatal(err)
	}
	h.expect("set", "tp") // restarted, without its file changing
	s := h.status("tp")
	if s.State != StateRunning || s.Restarts != 1 || !strings.Contains(s.LastError, "killed while starting: signal: killed") {
		t.Errorf("status after the restart = %+v, want running, 1 restart, the kill as last error", s)
	}
}

// A plugin running Options.MaxInFlight requests refuses one more at once,
// naming the limit; once one ends, the next is served.
func TestPluginInFlightLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{MaxInFlight: 1})
	e := h.expect("set", "tp")
	ctx, cancel := context.WithCancel(t.Context())
	hung := make(chan error, 1)
	go func() {
		_, err := e.p.CallTool(ctx, &tool.Call{Name: "hang", Arguments: json.RawMessage(`{}`)})
		hung <- err
	}()
	eventually(t, "the hanging call to run", func() bool {
		g := e.p.(*provider).g
		g.mu.Lock()
		in := g.live
		g.mu.Unlock()
		in.callsMu.Lock()
		defer in.callsMu.Unlock()
		return in.inFlight == 1
	})
	_, err := call(t, e.p, "pid", "")
	const want = `tool "pid" of provider "tp": plugin tp is running 1 requests, its limit (limits { plugin_in_flight }); retry when one ends`
	if !errors.Is(err, tool.ErrRefused) || err.Error() != want {
		t.Errorf("a request beyond the limit: %v, want tool.ErrRefused: %s", err, want)
	}
	cancel()
	<-hung
	mustPID(t, e.p)
}
