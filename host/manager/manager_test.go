package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/tool"
)

// The test plugin, built twice by TestMain: the variants differ in one tool
// (variant_v1, variant_v2).
var pluginV1, pluginV2 string

// pluginEcho is the bundled plugins/echo, built by TestMain.
var pluginEcho string

// v1Tools are the tools of the v1 test plugin.
var v1Tools = []string{"crash", "env", "grow", "hang", "pid", "spawn", "stdin", "variant_v1"}

// waitLong bounds every wait for an event; it is generous because plugins
// are real processes on a possibly loaded machine.
const waitLong = 30 * time.Second

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "manager-test-plugins")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginV1 = filepath.Join(dir, "testplugin-v1")
	pluginV2 = filepath.Join(dir, "testplugin-v2")
	for v, out := range map[string]string{"v1": pluginV1, "v2": pluginV2} {
		cmd := exec.Command("go", "build", "-o", out, "-ldflags", "-X main.variant="+v, "./internal/testplugin")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the test plugin:", err)
			os.Exit(1)
		}
	}
	pluginEcho = filepath.Join(dir, "echo")
	cmd := exec.Command("go", "build", "-o", pluginEcho, "../../plugins/echo")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building plugins/echo:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// event is one Publisher call.
type event struct {
	op    string // "set" or "remove"
	name  string
	tools []string      // sorted tool names, for "set"
	p     tool.Provider // for "set"
}

// recorder is a Publisher that reports every call on a channel.
type recorder struct{ ch chan event }

func (r *recorder) Set(p tool.Provider) {
	var names []string
	for _, d := range p.Tools() {
		names = append(names, d.Name)
	}
	slices.Sort(names)
	r.ch <- event{op: "set", name: p.Name(), tools: names, p: p}
}

func (r *recorder) Remove(name string) { r.ch <- event{op: "remove", name: name} }

// holdingRecorder is a recorder that is also a Holder; holds and releases
// are reported as events "hold" and "release".
type holdingRecorder struct{ *recorder }

func (r holdingRecorder) Hold() func() {
	r.ch <- event{op: "hold"}
	return sync.OnceFunc(func() { r.ch <- event{op: "release"} })
}

// logSink collects the manager's hclog JSON lines and lets a test await one.
type logSink struct {
	mu      sync.Mutex
	entries []map[string]any
	raw     []string
	notify  chan struct{} // closed and replaced on every entry
}

func newLogSink() *logSink { return &logSink{notify: make(chan struct{})} }

func (s *logSink) Write(p []byte) (int, error) {
	var e map[string]any
	_ = json.Unmarshal(p, &e) // not JSON: kept raw only
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, e)
	s.raw = append(s.raw, strings.TrimSpace(string(p)))
	close(s.notify)
	s.notify = make(chan struct{})
	return len(p), nil
}

// await waits for an entry from module (the logger name) whose message
// contains msg, and returns it.
func (s *logSink) await(t *testing.T, module, msg string) map[string]any {
	t.Helper()
	deadline := time.NewTimer(waitLong)
	defer deadline.Stop()
	seen := 0
	for {
		s.mu.Lock()
		for ; seen < len(s.entries); seen++ {
			e := s.entries[seen]
			if e["@module"] == module && strings.Contains(fmt.Sprint(e["@message"]), msg) {
				s.mu.Unlock()
				return e
			}
		}
		notify := s.notify
		s.mu.Unlock()
		select {
		case <-notify:
		case <-deadline.C:
			t.Fatalf("no log entry of %q containing %q", module, msg)
		}
	}
}

func (s *logSink) dump(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.raw {
		t.Log(l)
	}
}

// harness runs a Manager on a directory for one test.
type harness struct {
	t      *testing.T
	dir    string
	m      *Manager
	rec    *recorder
	logs   *logSink
	cancel context.CancelFunc
	done   chan error
}

// start runs a Manager with opts (Dir, Publisher and Logger are set here).
func start(t *testing.T, dir string, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, dir: dir, rec: &recorder{ch: make(chan event, 100)}, logs: newLogSink(), done: make(chan error, 1)}
	opts.Dir = dir
	if hr, ok := opts.Publisher.(holdingRecorder); ok {
		h.rec = hr.recorder
	} else {
		opts.Publisher = h.rec
	}
	opts.Logger = hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: h.logs, JSONFormat: true})
	m, err := New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- m.Run(ctx) }()
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			h.logs.dump(t)
		}
	})
	return h
}

// stop ends Run and waits for it to return.
func (h *harness) stop() {
	h.t.Helper()
	h.cancel()
	select {
	case err, ok := <-h.done:
		if ok && err != nil {
			h.t.Errorf("Run: %v", err)
		}
		if ok {
			close(h.done)
		}
	case <-time.After(waitLong):
		h.t.Fatal("Run did not return after its context ended")
	}
}

// next returns the next Publisher call.
func (h *harness) next() event {
	h.t.Helper()
	select {
	case e := <-h.rec.ch:
		return e
	case <-time.After(waitLong):
		h.t.Fatal("no Publisher call")
		return event{}
	}
}

// expect returns the next Publisher call, which must be op on name.
func (h *harness) expect(op, name string) event {
	h.t.Helper()
	e := h.next()
	if e.op != op || e.name != name {
		h.t.Fatalf("Publisher call = %s %s, want %s %s", e.op, e.name, op, name)
	}
	return e
}

// noEvent checks that no Publisher call is pending.
func (h *harness) noEvent() {
	h.t.Helper()
	select {
	case e := <-h.rec.ch:
		h.t.Fatalf("unexpected Publisher call %s %s", e.op, e.name)
	default:
	}
}

func (h *harness) ready() {
	h.t.Helper()
	select {
	case <-h.m.Ready():
	case <-time.After(waitLong):
		h.t.Fatal("Ready not closed")
	}
}

// status returns the status of one plugin.
func (h *harness) status(name string) PluginStatus {
	h.t.Helper()
	for _, s := range h.m.Status() {
		if s.Name == name {
			return s
		}
	}
	h.t.Fatalf("no status for %s in %+v", name, h.m.Status())
	return PluginStatus{}
}

// call runs a tool of p and returns its text.
func call(t *testing.T, p tool.Provider, name string, args string) (string, error) {
	t.Helper()
	if args == "" {
		args = "{}"
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	res, err := p.CallTool(ctx, &tool.Call{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		return "", err
	}
	var r struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) != 1 {
		t.Fatalf("result of %s: %s (%v)", name, res, err)
	}
	if r.IsError {
		return "", fmt.Errorf("tool error: %s", r.Content[0].Text)
	}
	return r.Content[0].Text, nil
}

func mustCall(t *testing.T, p tool.Provider, name string, args string) string {
	t.Helper()
	s, err := call(t, p, name, args)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return s
}

func mustPID(t *testing.T, p tool.Provider) int {
	t.Helper()
	pid, err := strconv.Atoi(mustCall(t, p, "pid", ""))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// copyFile writes src to dst in many small writes, the way cp does.
func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	for len(b) > 0 {
		n := min(len(b), 128<<10)
		if _, err := f.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// replaceFile puts src at dst atomically (a running binary cannot be
// written in place: ETXTBSY).
func replaceFile(t *testing.T, src, dst string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".new")
	copyFile(t, src, tmp, 0o755)
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// alive reports whether pid is a live process (a zombie is dead).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may contain spaces, so look after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// eventually polls cond until it holds. Used only for effects that have no
// event to await (a process vanishing, goroutines winding down).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestInitialScanLoadsExecutablesOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "alpha"), 0o755)
	copyFile(t, pluginV1, filepath.Join(dir, "beta.exe"), 0o755)
	copyFile(t, pluginV1, filepath.Join(dir, "notes"), 0o644)               // not executable
	copyFile(t, pluginV1, filepath.Join(dir, ".hidden"), 0o755)             // dotfile
	copyFile(t, pluginV1, filepath.Join(dir, "alpha~"), 0o755)              // editor backup
	writeScript(t, filepath.Join(dir, "junk"), "echo boom >&2; echo hello") // talks on stdout
	writeScript(t, filepath.Join(dir, "slow"), "exec sleep 60")             // never handshakes
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}

	var launchedMu sync.Mutex
	var launched []string
	h := start(t, dir, Options{
		Env:          []string{"PLUGHOST_WORKSPACE=/work/space"},
		StartTimeout: 2 * time.Second,
		Launcher: func(name string, cmd *exec.Cmd) (*Launch, error) {
			launchedMu.Lock()
			launched = append(launched, name)
			launchedMu.Unlock()
			cmd.Env = append(cmd.Env, "TESTPLUGIN_LAUNCHED=yes")
			return &Launch{Cmd: cmd, Started: func(pid int) ([]string, error) {
				if pid <= 0 {
					return nil, fmt.Errorf("Started got pid %d", pid)
				}
				return []string{"test-layer"}, nil
			}}, nil
		},
	})
	h.ready()

	sets := map[string]event{}
	for range 2 {
		e := h.next()
		if e.op != "set" {
			t.Fatalf("Publisher call %s %s, want set", e.op, e.name)
		}
		sets[e.name] = e
	}
	h.noEvent()
	for _, name := range []string{"alpha", "beta"} {
		if diff := cmp.Diff(v1Tools, sets[name].tools); diff != "" {
			t.Errorf("tools of %s (-want +got):\n%s", name, diff)
		}
	}

	type brief struct {
		Name  string
		State State
		Tools int
	}
	var got []brief
	for _, s := range h.m.Status() {
		got = append(got, brief{s.Name, s.State, s.Tools})
	}
	want := []brief{{"alpha", StateRunning, len(v1Tools)}, {"beta", StateRunning, len(v1Tools)}, {"junk", StateFailed, 0}, {"slow", StateFailed, 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	alpha := h.status("alpha")
	if alpha.PID == 0 || alpha.Version != "testplugin v1" || alpha.Path != filepath.Join(dir, "alpha") || !slices.Equal(alpha.Sandbox, []string{"test-layer"}) {
		t.Errorf("alpha status = %+v", alpha)
	}
	if e := h.status("junk").LastError; !strings.Contains(e, "Unrecognized remote plugin message: hello") || !strings.Contains(e, "boom") {
		t.Errorf("junk LastError = %q, want the unrecognized handshake line and the stderr tail", e)
	}
	if e := h.status("slow").LastError; !strings.Contains(e, "timeout while waiting for plugin to start") {
		t.Errorf("slow LastError = %q, want a handshake timeout", e)
	}

	p := sets["alpha"].p
	for _, c := range []struct{ tool, args, want string }{
		{"env", `{"name":"PLUGHOST_WORKSPACE"}`, "/work/space"},
		{"env", `{"name":"TESTPLUGIN_LAUNCHED"}`, "yes"},
		{"variant_v1", "", "v1"},
	} {
		if got := mustCall(t, p, c.tool, c.args); got != c.want {
			t.Errorf("%s %s = %q, want %q", c.tool, c.args, got, c.want)
		}
	}
	launchedMu.Lock()
	slices.Sort(launched)
	if diff := cmp.Diff([]string{"alpha", "beta", "junk", "slow"}, launched); diff != "" {
		t.Errorf("Launcher calls (-want +got):\n%s", diff)
	}
	launchedMu.Unlock()

	// The plugin's stderr (hclog JSON) is logged under its provider name.
	if e := h.logs.await(t, "test.alpha", "testplugin started"); e["@level"] != "info" || e["variant"] != "v1" || e["plugin_module"] != "testplugin" {
		t.Errorf("forwarded plugin log entry = %v", e)
	}

	// A failed plugin is loaded again when its file changes.
	replaceFile(t, pluginV1, filepath.Join(dir, "junk"))
	h.expect("set", "junk")
	if s := h.status("junk"); s.State != StateRunning || s.LastError != "" {
		t.Errorf("junk after replacement = %+v", s)
	}
}

func TestWatchLoadsReloadsAndUnloads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := start(t, dir, Options{})
	h.ready() // nothing to load
	path := filepath.Join(dir, "tp")

	// A new file, written in many writes, is loaded once.
	copyFile(t, pluginV1, path, 0o755)
	e := h.expect("set", "tp")
	if diff := cmp.Diff(v1Tools, e.tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	pid1 := mustPID(t, e.p)

	// The plugin announces a new tool: it is listed and published again.
	mustCall(t, e.p, "grow", "")
	e = h.expect("set", "tp")
	if !slices.Contains(e.tools, "grown") {
		t.Errorf("tools after grow = %v, want grown among them", e.tools)
	}
	if n := h.status("tp").Tools; n != len(v1Tools)+1 {
		t.Errorf("Status Tools = %d, want %d", n, len(v1Tools)+1)
	}

	// Replaced: the new process is published (with no Remove before it),
	// then the old one stops.
	replaceFile(t, pluginV2, path)
	e = h.expect("set", "tp")
	if !slices.Contains(e.tools, "variant_v2") || slices.Contains(e.tools, "variant_v1") {
		t.Errorf("tools after replacement = %v, want variant_v2 and not variant_v1", e.tools)
	}
	pid2 := mustPID(t, e.p)
	if pid2 == pid1 {
		t.Fatalf("pid unchanged (%d) after replacement", pid1)
	}
	eventually(t, "the replaced process to exit", func() bool { return !alive(pid1) })

	// Removed: unpublished and stopped.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	h.expect("remove", "tp")
	eventually(t, "the removed plugin's process to exit", func() bool { return !alive(pid2) })
	eventually(t, "the removed plugin to leave Status", func() bool { return len(h.m.Status()) == 0 })

	// No longer executable counts as removed; executable again, as new.
	copyFile(t, pluginV1, path, 0o755)
	h.expect("set", "tp")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	h.expect("remove", "tp")
	h.noEvent()
}

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
	h.expect("remove", "tp")
	e = h.expect("set", "tp")
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

func TestCrashLoopParksUntilTheFileChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "die")
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	h := start(t, dir, Options{
		Env:            []string{"TESTPLUGIN_DIE_IF=" + marker},
		BackoffInitial: 5 * time.Millisecond,
		BackoffMax:     20 * time.Millisecond,
		CrashLimit:     3,
	})
	e := h.expect("set", "tp")

	// From now on the plugin dies at start.
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, e.p, "crash", ""); err == nil {
		t.Fatal("call crash: no error")
	}
	h.expect("remove", "tp")
	h.logs.await(t, "test", "plugin parked")
	if !strings.Contains(h.status("tp").LastError, "the plugin exited by itself: exit status 4") {
		t.Errorf("LastError = %q, want the start failure to name the exit status", h.status("tp").LastError)
	}
	s := h.status("tp")
	if s.State != StateParked || s.Restarts != 2 || s.PID != 0 ||
		!strings.Contains(s.LastError, "crashed 3 times within 1m0s; parked until the file changes") {
		t.Errorf("status = %+v, want parked after 3 deaths", s)
	}
	h.noEvent()

	// A change of the file unparks it.
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := os.Chtimes(path, now, now); err != nil {
		t.Fatal(err)
	}
	h.expect("set", "tp")
	if s := h.status("tp"); s.State != StateRunning || s.LastError != "" {
		t.Errorf("status after the change = %+v", s)
	}
}

func TestDirRemovedKeepsServing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{})
	e := h.expect("set", "tp")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	h.logs.await(t, "test", "plugin directory is gone; keeping the loaded plugins")
	h.noEvent()
	if s := h.status("tp"); s.State != StateRunning {
		t.Errorf("status = %+v, want running", s)
	}
	mustPID(t, e.p)
}

// TestShutdownLeavesNothing runs alone (not parallel): it counts the test
// process's goroutines and file descriptors.
func TestShutdownLeavesNothing(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	fds := countFDs(t)

	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{})
	e := h.expect("set", "tp")
	pid := mustPID(t, e.p)
	child, err := strconv.Atoi(mustCall(t, e.p, "spawn", ""))
	if err != nil {
		t.Fatal(err)
	}
	sockDir := mustCall(t, e.p, "env", `{"name":"PLUGIN_UNIX_SOCKET_DIR"}`)
	if sockDir == "" {
		t.Fatal("plugin has no PLUGIN_UNIX_SOCKET_DIR")
	}
	if !alive(child) {
		t.Fatalf("spawned child %d not running", child)
	}

	h.stop()
	h.expect("remove", "tp")
	if alive(pid) {
		t.Errorf("plugin (pid %d) alive after Run returned", pid)
	}
	// The child got its SIGKILL before Run returned; under load it may take
	// a moment to be scheduled and die.
	eventually(t, "the plugin's child to die", func() bool { return !alive(child) })
	if _, err := os.Stat(sockDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket directory %s: %v, want it removed", sockDir, err)
	}
	// gRPC's connection goroutines end just after the connection closes.
	eventually(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= goroutines })
	eventually(t, "file descriptors back to the baseline", func() bool { return countFDs(t) <= fds })
}

func countFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func TestUnloadKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	h := start(t, dir, Options{})
	e := h.expect("set", "tp")
	child, err := strconv.Atoi(mustCall(t, e.p, "spawn", ""))
	if err != nil {
		t.Fatal(err)
	}
	// The child holds the plugin's stderr open: unloading must not wait
	// for it, and must kill it.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	h.expect("remove", "tp")
	eventually(t, "the plugin's child to die", func() bool { return !alive(child) })
	eventually(t, "the plugin to leave Status", func() bool { return len(h.m.Status()) == 0 })
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

// TestPluginStdinIsNotTheHosts runs alone (not parallel): it points os.Stdin,
// which go-plugin hands to every plugin command, at a pipe, as when an MCP
// client drives the host over stdio.
func TestPluginStdinIsNotTheHosts(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	saved := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = saved }()

	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{})
	e := h.expect("set", "tp")
	if got := mustCall(t, e.p, "stdin", ""); got != "true" {
		t.Errorf("plugin's stdin is /dev/null: %s, want true", got)
	}
	h.stop()
}

// TestBundledEchoReloadDrainsCallsInFlight loads plugins/echo, forwards its
// progress notifications, and replaces it while a call is running: the call
// finishes on the old process, which stops only afterwards.
func TestBundledEchoReloadDrainsCallsInFlight(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "echo")
	copyFile(t, pluginEcho, path, 0o755)
	h := start(t, dir, Options{StopTimeout: waitLong})
	e := h.expect("set", "echo")
	if diff := cmp.Diff([]string{"echo", "sleep"}, e.tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if got := mustCall(t, e.p, "echo", `{"text":"hi"}`); got != "hi" {
		t.Errorf("echo = %q, want hi", got)
	}

	progress := make(chan tool.Progress, 100)
	type outcome struct {
		res json.RawMessage
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := e.p.CallTool(context.Background(), &tool.Call{
			Name:      "sleep",
			Arguments: json.RawMessage(`{"ms":600}`),
			Progress:  func(p tool.Progress) { progress <- p },
		})
		done <- outcome{res, err}
	}()
	select {
	case p := <-progress:
		if p.Total != 600 {
			t.Errorf("progress = %+v, want a total of 600", p)
		}
	case <-time.After(waitLong):
		t.Fatal("no progress from sleep")
	}

	replaceFile(t, pluginEcho, path)
	h.expect("set", "echo")
	select {
	case o := <-done:
		if o.err != nil || !strings.Contains(string(o.res), `"content"`) || strings.Contains(string(o.res), `"isError":true`) {
			t.Errorf("sleep across a reload = %s, %v; want a result", o.res, o.err)
		}
	case <-time.After(waitLong):
		t.Fatal("sleep did not finish")
	}
}

// A burst of directory changes holds the publisher until every plugin in it
// has been published or has failed, so that clients hear of it once.
func TestBurstHoldsThePublisherUntilSettled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := start(t, dir, Options{
		Publisher:    holdingRecorder{&recorder{ch: make(chan event, 100)}},
		StartTimeout: 5 * time.Second,
	})
	h.expect("hold", "")    // the first scan
	h.expect("release", "") // found nothing
	h.ready()

	// Staged under hidden names (ignored), then renamed in one go: a burst.
	for _, name := range []string{"a", "b", "c"} {
		copyFile(t, pluginV1, filepath.Join(dir, "."+name), 0o755)
	}
	writeScript(t, filepath.Join(dir, ".junk"), "echo hello") // fails its handshake
	for _, name := range []string{"a", "b", "c", "junk"} {
		if err := os.Rename(filepath.Join(dir, "."+name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	h.expect("hold", "")
	var set []string
	for {
		e := h.next()
		if e.op == "release" {
			break
		}
		if e.op != "set" {
			t.Fatalf("Publisher call %s %s during the burst", e.op, e.name)
		}
		set = append(set, e.name)
	}
	slices.Sort(set)
	if diff := cmp.Diff([]string{"a", "b", "c"}, set); diff != "" {
		t.Errorf("published before the release (-want +got):\n%s", diff)
	}
	if st := h.status("junk"); st.State != StateFailed {
		t.Errorf("junk is %s, want failed", st.State)
	}

	// Removing files is a burst too: released once both are gone.
	for _, name := range []string{"a", "b"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	h.expect("hold", "")
	var removed []string
	for e := h.next(); e.op != "release"; e = h.next() {
		removed = append(removed, e.op+" "+e.name)
	}
	slices.Sort(removed)
	if diff := cmp.Diff([]string{"remove a", "remove b"}, removed); diff != "" {
		t.Errorf("calls before the release (-want +got):\n%s", diff)
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

// A binary caught halfway through being copied in is not launched; it is
// loaded once the rest of it arrives.
func TestUnfinishedBinaryWaitsForTheRest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := start(t, dir, Options{})
	h.ready()
	data, err := os.ReadFile(pluginV1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tp")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	half := len(data) / 2
	if _, err := f.Write(data[:half]); err != nil {
		t.Fatal(err)
	}
	h.logs.await(t, "test", "plugin file looks unfinished")
	h.noEvent()
	if _, err := f.Write(data[half:]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	e := h.expect("set", "tp")
	if diff := cmp.Diff(v1Tools, e.tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if st := h.status("tp"); st.State != StateRunning || st.LastError != "" {
		t.Errorf("status %s, last error %q; want running with no error", st.State, st.LastError)
	}
}

// A binary whose last byte is written but whose writer has not closed it yet
// cannot be executed (ETXTBSY) and brings no further directory event: the
// launch is retried until the writer closes it.
func TestBinaryStillOpenForWritingIsRetried(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := start(t, dir, Options{})
	h.ready()
	data, err := os.ReadFile(pluginV1)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "tp"), os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	h.logs.await(t, "test", "plugin file is still open for writing; retrying")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	h.expect("set", "tp")
	if st := h.status("tp"); st.State != StateRunning {
		t.Errorf("status %s (%s), want running", st.State, st.LastError)
	}
}

// A file whose provider name another file has is listed as refused, at
// start and when it appears later, until it goes away.
func TestRefusedDuplicateName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	copyFile(t, pluginV1, filepath.Join(dir, "tp.sh"), 0o755)
	h := start(t, dir, Options{})
	h.expect("set", "tp")
	h.ready()
	refused := func(base string) func() bool {
		return func() bool {
			for _, s := range h.m.Status() {
				if s.State == StateRefused && s.Path == filepath.Join(dir, base) && strings.Contains(s.LastError, base+" not loaded: the plugin file tp has the same provider name") {
					return true
				}
			}
			return false
		}
	}
	eventually(t, "tp.sh to be listed as refused", refused("tp.sh"))

	copyFile(t, pluginV1, filepath.Join(dir, "tp.bin"), 0o755)
	eventually(t, "tp.bin to be listed as refused", refused("tp.bin"))

	for _, base := range []string{"tp.sh", "tp.bin"} {
		if err := os.Remove(filepath.Join(dir, base)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the refused files to leave Status", func() bool { return len(h.m.Status()) == 1 })
	if st := h.status("tp"); st.State != StateRunning {
		t.Errorf("tp is %s, want running", st.State)
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
	h.expect("remove", "tp")
	e = h.expect("set", "tp")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	h.expect("remove", "tp")
	if _, err := startCall(t, e.p, "pid"); !errors.Is(err, tool.ErrRefused) {
		t.Errorf("after unload: %v, want tool.ErrRefused", err)
	}
}
