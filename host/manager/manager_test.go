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

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/tool"
)

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
	if alpha.PID == 0 || alpha.Version != "testplugin v1" || alpha.Contract != pluginclient.ContractVersion || alpha.Path != filepath.Join(dir, "alpha") || !slices.Equal(alpha.Sandbox, []string{"test-layer"}) {
		t.Errorf("alpha status = %+v", alpha)
	}
	if st := h.status("junk"); !strings.Contains(st.LastError, "Unrecognized remote plugin message: hello") || !strings.Contains(st.LastStderr, "boom") {
		t.Errorf("junk LastError = %q, LastStderr = %q: want the unrecognized handshake line and the stderr", st.LastError, st.LastStderr)
	}
	if e := h.status("slow").LastError; e != "did not complete the go-plugin handshake within 2s" {
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
	inst1 := instanceOf(t, e.p)

	// The plugin announces a new tool: it is listed and published again,
	// a new provider of the same instance.
	mustCall(t, e.p, "grow", "")
	e = h.expect("set", "tp")
	if instanceOf(t, e.p) != inst1 {
		t.Error("the provider published after a change of lists is not the same tool.Instance")
	}
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
	if instanceOf(t, e.p) == inst1 {
		t.Error("the replacement process is the same tool.Instance as the one it replaced")
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

func TestCrashLoopParksUntilTheFileChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "die")
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	var mu sync.Mutex
	events := map[Event]int{}
	h := start(t, dir, Options{
		Env:            []string{"TESTPLUGIN_DIE_IF=" + marker},
		BackoffInitial: 5 * time.Millisecond,
		BackoffMax:     20 * time.Millisecond,
		CrashLimit:     3,
		OnEvent: func(name string, e Event) {
			mu.Lock()
			defer mu.Unlock()
			if name == "tp" {
				events[e]++
			}
		},
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
	mu.Lock()
	if diff := cmp.Diff(map[Event]int{EventStarted: 3, EventLoaded: 1, EventCrashed: 3, EventParked: 1}, events); diff != "" {
		t.Errorf("OnEvent (-want +got):\n%s", diff)
	}
	mu.Unlock()
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
		// The four renames below are one burst only if they fall within
		// the debounce: 10 ms by default, which a loaded CI machine once
		// stretched to 58 ms between two renames (two bursts, two holds).
		Debounce: time.Second,
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
	st := h.status("tp")
	if st.State == StateLoading {
		// The writer's close may come as an event of its own after the
		// load began: the file is loaded once more, and published again.
		h.expect("set", "tp")
		st = h.status("tp")
	}
	if st.State != StateRunning || st.LastError != "" {
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
	st := h.status("tp")
	if st.State == StateLoading {
		// The writes' event (WRITE) may arrive after the retried launch
		// began: the file is loaded once more, and published again.
		h.expect("set", "tp")
		st = h.status("tp")
	}
	if st.State != StateRunning {
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
