package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/tool"
)

// launches counts the plugin processes started, by provider name.
type launches struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *launches) launcher() Launcher {
	return func(name string, cmd *exec.Cmd) (*Launch, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.n == nil {
			l.n = map[string]int{}
		}
		l.n[name]++
		return &Launch{Cmd: cmd}, nil
	}
}

func (l *launches) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[name]
}

func (l *launches) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.n {
		n += c
	}
	return n
}

// countingRecorder is a recorder that also calls onSet on every Set.
type countingRecorder struct {
	*recorder
	onSet func()
}

func (c *countingRecorder) Set(p tool.Provider) {
	c.onSet()
	c.recorder.Set(p)
}

// count returns how many entries of module contain msg so far.
func (s *logSink) count(module, msg string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.entries {
		if e["@module"] == module && strings.Contains(fmt.Sprint(e["@message"]), msg) {
			n++
		}
	}
	return n
}

// awaitCount waits until n entries of module contain msg.
func (s *logSink) awaitCount(t *testing.T, module, msg string, n int) {
	t.Helper()
	deadline := time.NewTimer(waitLong)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		notify := s.notify
		s.mu.Unlock()
		if s.count(module, msg) >= n {
			return
		}
		select {
		case <-notify:
		case <-deadline.C:
			t.Fatalf("fewer than %d log entries of %q containing %q", n, module, msg)
		}
	}
}

// warmCache runs an eager manager with the catalog cache on dir until
// every plugin has loaded, so that the cache holds their entries.
func warmCache(t *testing.T, dir, cacheDir string) {
	t.Helper()
	h := start(t, dir, Options{CacheDir: cacheDir})
	h.ready()
	h.stop()
}

// readEntry reads the cache entry of the named plugin.
func readEntry(t *testing.T, cacheDir, name string) *cacheEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cacheDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var e cacheEntry
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("cache entry of %s: %v", name, err)
	}
	return &e
}

func entryTools(e *cacheEntry) []string {
	var names []string
	for _, raw := range e.Tools {
		k, _ := keyOf(raw, "name")
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// With a warm cache a lazy plugin is published at once and Ready closes
// with no process started; the first call starts the plugin and succeeds,
// and changes no list.
func TestWarmCachePublishesBeforeAnyProcessStarts(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	copyFile(t, pluginV1, filepath.Join(dir, "tq"), 0o755)
	warmCache(t, dir, cacheDir)
	if got := entryTools(readEntry(t, cacheDir, "tp")); !slices.Equal(got, v1Tools) {
		t.Fatalf("cached tools = %v, want %v", got, v1Tools)
	}

	var ls launches
	h := start(t, dir, Options{CacheDir: cacheDir, Start: StartLazy, Launcher: ls.launcher()})
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
	for _, name := range []string{"tp", "tq"} {
		if diff := cmp.Diff(v1Tools, sets[name].tools); diff != "" {
			t.Errorf("tools of %s (-want +got):\n%s", name, diff)
		}
		if st := h.status(name); st.State != StateIdle || st.PID != 0 || st.Version != "testplugin v1" || st.Contract != pluginclient.ContractVersion || st.Tools != len(v1Tools) || st.Resources != 1 {
			t.Errorf("status of %s = %+v, want idle, no pid, from the cache", name, st)
		}
		want := tool.About{Title: "Test plugin v1", Description: "What the manager's tests start."}
		if got := sets[name].p.(tool.Describer).About(); got != want {
			t.Errorf("About of %s from the cache = %+v, want %+v", name, got, want)
		}
	}
	if n := ls.total(); n != 0 {
		t.Fatalf("%d plugin processes started, want none", n)
	}

	pid := mustPID(t, sets["tp"].p)
	if st := h.status("tp"); st.State != StateRunning || st.PID != pid {
		t.Errorf("status after the first call = %+v, want running as pid %d", st, pid)
	}
	if ls.count("tp") != 1 || ls.count("tq") != 0 {
		t.Errorf("launches: tp %d, tq %d; want 1, 0", ls.count("tp"), ls.count("tq"))
	}
	h.noEvent()
}

// An eager plugin with a warm cache is published from it, then started;
// the same definitions change nothing.
func TestWarmCacheEagerIdenticalChangesNothing(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	warmCache(t, dir, cacheDir)

	h := start(t, dir, Options{CacheDir: cacheDir})
	e := h.expect("set", "tp")
	h.logs.await(t, "test", "plugin loaded")
	h.noEvent()
	pid := mustPID(t, e.p)
	if st := h.status("tp"); st.State != StateRunning || st.PID != pid {
		t.Errorf("status = %+v, want running as pid %d", st, pid)
	}
}

// The entry is reused for a copy with the same contents (stat differs,
// digest matches), and ignored for other contents, then rewritten.
func TestChangedBinaryInvalidatesItsEntry(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	warmCache(t, dir, cacheDir)

	replaceFile(t, pluginV1, path)
	var ls launches
	h := start(t, dir, Options{CacheDir: cacheDir, Start: StartLazy, Launcher: ls.launcher()})
	h.ready()
	if e := h.expect("set", "tp"); !slices.Equal(e.tools, v1Tools) || ls.total() != 0 {
		t.Fatalf("same contents: tools %v after %d launches, want the cached ones and none", e.tools, ls.total())
	}
	h.stop()

	replaceFile(t, pluginV2, path)
	var ls2 launches
	h = start(t, dir, Options{CacheDir: cacheDir, Start: StartLazy, Launcher: ls2.launcher()})
	h.ready()
	e := h.expect("set", "tp")
	if !slices.Contains(e.tools, "variant_v2") || ls2.count("tp") != 1 {
		t.Fatalf("other contents: tools %v after %d launches, want v2's after one", e.tools, ls2.count("tp"))
	}
	if l := h.logs.await(t, "test.cache", "stale catalog cache entry"); l["@level"] != "debug" {
		t.Errorf("stale entry logged at %v, want debug", l["@level"])
	}
	if got := entryTools(readEntry(t, cacheDir, "tp")); !slices.Contains(got, "variant_v2") {
		t.Errorf("rewritten entry's tools = %v, want v2's", got)
	}
}

// A corrupt or foreign entry is ignored with a warning: the plugin is
// started to learn its definitions, and the entry rewritten.
func TestCorruptOrForeignEntryIsIgnored(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	copyFile(t, pluginV1, filepath.Join(dir, "tq"), 0o755)
	warmCache(t, dir, cacheDir)
	if err := os.WriteFile(filepath.Join(cacheDir, "tp.json"), []byte(`{"format":1,"name":"tp","tools":[`), 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := readEntry(t, cacheDir, "tq")
	foreign.Name = "other"
	b, _ := json.Marshal(foreign)
	if err := os.WriteFile(filepath.Join(cacheDir, "tq.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}

	var ls launches
	h := start(t, dir, Options{CacheDir: cacheDir, Start: StartLazy, Launcher: ls.launcher()})
	h.ready()
	for range 2 {
		if e := h.next(); e.op != "set" || !slices.Equal(e.tools, v1Tools) {
			t.Fatalf("Publisher call %s %s %v, want a set of v1's tools", e.op, e.name, e.tools)
		}
	}
	for _, msg := range []string{"corrupt catalog cache entry", "foreign catalog cache entry"} {
		if l := h.logs.await(t, "test.cache", msg); l["@level"] != "warn" {
			t.Errorf("%s logged at %v, want warn", msg, l["@level"])
		}
	}
	if ls.count("tp") != 1 || ls.count("tq") != 1 {
		t.Errorf("launches: tp %d, tq %d; want 1 each", ls.count("tp"), ls.count("tq"))
	}
	for _, name := range []string{"tp", "tq"} {
		if e := readEntry(t, cacheDir, name); e.Name != name || e.Format != cacheFormat || !slices.Equal(entryTools(e), v1Tools) {
			t.Errorf("rewritten entry of %s = %s %d %v", name, e.Name, e.Format, entryTools(e))
		}
	}
}

// Concurrent first requests to an idle lazy plugin share one start.
func TestConcurrentFirstCallsShareOneStart(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	warmCache(t, dir, cacheDir)
	var ls launches
	h := start(t, dir, Options{CacheDir: cacheDir, Start: StartLazy, Launcher: ls.launcher()})
	e := h.expect("set", "tp")
	srv := e.p.(tool.Server)

	const n = 8
	type answer struct {
		text string
		err  error
	}
	answers := make(chan answer, n)
	for i := range n {
		go func() {
			if i%2 == 0 {
				s, err := call(t, e.p, "pid", "")
				answers <- answer{s, err}
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			res, err := srv.ReadResource(ctx, &tool.Read{URI: "test://doc"})
			answers <- answer{string(res), err}
		}()
	}
	var pid string
	for range n {
		a := <-answers
		if a.err != nil {
			t.Fatalf("request: %v", a.err)
		}
		if !strings.Contains(a.text, "the doc") {
			if pid != "" && a.text != pid {
				t.Errorf("pids %s and %s: more than one process served", pid, a.text)
			}
			pid = a.text
		}
	}
	if c := ls.count("tp"); c != 1 {
		t.Errorf("%d starts, want one", c)
	}
}

// A lazy plugin without a cache entry is started once to learn its
// definitions, stopped after its idle timeout (staying published), and
// started again by the next call.
func TestIdleStopAndRestartOnTheNextCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	var ls launches
	h := start(t, dir, Options{Start: StartLazy, IdleTimeout: 50 * time.Millisecond, Launcher: ls.launcher()})
	e := h.expect("set", "tp")
	h.logs.awaitCount(t, "test", "stopping the idle plugin", 1)
	eventually(t, "the status to say idle", func() bool { st := h.status("tp"); return st.State == StateIdle && st.PID == 0 })

	pid := mustPID(t, e.p)
	if ls.count("tp") != 2 {
		t.Errorf("%d starts, want 2", ls.count("tp"))
	}
	h.logs.awaitCount(t, "test", "stopping the idle plugin", 2)
	eventually(t, "the idle plugin to exit", func() bool { return !alive(pid) })
	h.noEvent() // stopping and starting changed no list
	if st := h.status("tp"); st.Tools != len(v1Tools) {
		t.Errorf("status of the idle plugin = %+v, want its tools counted", st)
	}
}

// A held resource subscription keeps a lazy plugin up; once released, the
// plugin is stopped.
func TestHeldSubscriptionKeepsTheLazyPluginUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{Start: StartLazy, IdleTimeout: 50 * time.Millisecond})
	e := h.expect("set", "tp")
	srv := e.p.(tool.Server)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := srv.SubscribeResource(ctx, "test://doc", true); err != nil {
		t.Fatal(err)
	}
	pid := mustPID(t, e.p)
	const kept = "the lazy plugin is not idle"
	h.logs.awaitCount(t, "test", kept, h.logs.count("test", kept)+2)
	if st := h.status("tp"); st.State != StateRunning || st.PID != pid || !alive(pid) {
		t.Fatalf("status while subscribed = %+v, want running as pid %d", st, pid)
	}

	stops := h.logs.count("test", "stopping the idle plugin")
	if err := srv.SubscribeResource(ctx, "test://doc", false); err != nil {
		t.Fatal(err)
	}
	h.logs.awaitCount(t, "test", "stopping the idle plugin", stops+1)
	eventually(t, "the idle plugin to exit", func() bool { return !alive(pid) })
}

// Definitions that differ from the cached ones are published once the
// plugin runs, and the entry is rewritten.
func TestDifferingDefinitionsRepublishAndRewrite(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	warmCache(t, dir, cacheDir)
	e := readEntry(t, cacheDir, "tp")
	e.Tools = e.Tools[:len(e.Tools)-1] // a tool fewer than the plugin offers
	b, _ := json.Marshal(e)
	if err := os.WriteFile(filepath.Join(cacheDir, "tp.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}

	h := start(t, dir, Options{CacheDir: cacheDir})
	if got := h.expect("set", "tp"); len(got.tools) != len(v1Tools)-1 {
		t.Fatalf("first set: %v, want the cached tools", got.tools)
	}
	if got := h.expect("set", "tp"); !slices.Equal(got.tools, v1Tools) {
		t.Fatalf("second set: %v, want the plugin's own", got.tools)
	}
	h.logs.await(t, "test.cache", "catalog cache entry written")
	if got := entryTools(readEntry(t, cacheDir, "tp")); !slices.Equal(got, v1Tools) {
		t.Errorf("rewritten entry's tools = %v, want %v", got, v1Tools)
	}
}

// The first load runs LoadConcurrency plugins at once, no more.
func TestFirstLoadIsBoundedParallel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const plugins, limit = 6, 2
	for i := range plugins {
		copyFile(t, pluginV1, filepath.Join(dir, fmt.Sprintf("tp%d", i)), 0o755)
	}
	var mu sync.Mutex
	active, peak, launched := 0, 0, 0
	changed := make(chan struct{})
	bump := func(d int) {
		mu.Lock()
		defer mu.Unlock()
		active += d
		peak = max(peak, active)
		close(changed)
		changed = make(chan struct{})
	}
	rec := &countingRecorder{recorder: &recorder{ch: make(chan event, 100)}, onSet: func() { bump(-1) }}
	h := start(t, dir, Options{
		LoadConcurrency: limit,
		Publisher:       rec,
		Launcher: func(name string, cmd *exec.Cmd) (*Launch, error) {
			bump(+1)
			mu.Lock()
			first := launched < limit
			launched++
			mu.Unlock()
			// The first ones wait for each other: loading one at a time
			// would never get past here.
			for first {
				mu.Lock()
				a, ch := active, changed
				mu.Unlock()
				if a >= limit {
					break
				}
				select {
				case <-ch:
				case <-time.After(waitLong):
					t.Errorf("only %d plugins load at once", a)
					first = false
				}
			}
			return &Launch{Cmd: cmd}, nil
		},
	})
	h.ready()
	for range plugins {
		if e := h.next(); e.op != "set" {
			t.Fatalf("Publisher call %s %s, want set", e.op, e.name)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if peak != limit || launched != plugins {
		t.Errorf("%d launches, at most %d at once; want %d, %d", launched, peak, plugins, limit)
	}
}

// TestFailedStartOnDemand: a lazy plugin that dies while it starts for a
// request fails that request with the exit, and serves again once it
// starts.
func TestFailedStartOnDemand(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	warmCache(t, dir, cacheDir)
	marker := filepath.Join(t.TempDir(), "die")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := start(t, dir, Options{CacheDir: cacheDir, Start: StartLazy, BackoffInitial: 10 * time.Millisecond,
		Env: []string{"TESTPLUGIN_DIE_IF=" + marker}})
	e := h.expect("set", "tp") // from the cache
	if _, err := call(t, e.p, "pid", ""); err == nil || !strings.Contains(err.Error(), "exit status 4") {
		t.Fatalf("a call whose start failed: error %v, want one naming the plugin's exit", err)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a call to succeed once the plugin starts again", func() bool {
		_, err := call(t, e.p, "pid", "")
		return err == nil
	})
}

// TestRequestGivesUpWaitingForAStart: a request whose context ends while
// its lazy plugin starts returns at once with the context's error.
func TestRequestGivesUpWaitingForAStart(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	warmCache(t, dir, cacheDir)
	marker := filepath.Join(t.TempDir(), "hang")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var ls launches
	h := start(t, dir, Options{CacheDir: cacheDir, Start: StartLazy, StartTimeout: waitLong, Launcher: ls.launcher(),
		Env: []string{"TESTPLUGIN_HANG_IF=" + marker}})
	e := h.expect("set", "tp")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := e.p.CallTool(ctx, &tool.Call{Name: "pid", Arguments: json.RawMessage(`{}`)})
		done <- err
	}()
	eventually(t, "the plugin to be launched for the request", func() bool { return ls.count("tp") == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the abandoned request: error %v, want context.Canceled", err)
	}
}

// TestStartForOverridesTheDefault: a plugin the override makes eager
// starts at once, the lazy one waits for a request; an idle timeout of
// its own stops the lazy one.
func TestStartForOverridesTheDefault(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	copyFile(t, pluginV1, filepath.Join(dir, "tq"), 0o755)
	warmCache(t, dir, cacheDir)
	var ls launches
	h := start(t, dir, Options{CacheDir: cacheDir, Start: StartLazy, Launcher: ls.launcher(),
		StartFor: func(name string) (StartMode, time.Duration) {
			if name == "tp" {
				return StartEager, 0
			}
			return "", 50 * time.Millisecond
		}})
	h.ready()
	eventually(t, "the eager plugin to run", func() bool { return h.status("tp").State == StateRunning })
	if ls.count("tp") != 1 || ls.count("tq") != 0 {
		t.Errorf("launches: tp %d, tq %d; want 1, 0", ls.count("tp"), ls.count("tq"))
	}
	var tq tool.Provider
	for tq == nil {
		if e := h.next(); e.op == "set" && e.name == "tq" {
			tq = e.p
		}
	}
	mustPID(t, tq) // starts the lazy one
	h.logs.awaitCount(t, "test", "stopping the idle plugin", 1)
	if st := h.status("tp"); st.State != StateRunning {
		t.Errorf("the eager plugin = %+v after the other's idle stop, want running", st)
	}
}
