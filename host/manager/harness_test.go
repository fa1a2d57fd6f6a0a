package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/tool"
)

// The test plugin, built twice by TestMain: the variants differ in one tool
// (variant_v1, variant_v2).
var pluginV1, pluginV2 string

// pluginEcho is the bundled plugins/echo, built by TestMain.
var pluginEcho string

// v1Tools are the tools of the v1 test plugin.
var v1Tools = []string{"ask", "breaklane", "crash", "env", "fail", "grow", "hang", "job", "longjob", "panic", "pid", "print", "spawn", "stdin", "touch", "variant_v1"}

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

// ResourceUpdated reports an "updated" event naming the URI in tools.
func (r *recorder) ResourceUpdated(provider, uri string) {
	r.ch <- event{op: "updated", name: provider, tools: []string{uri}}
}

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
	} else if cr, ok := opts.Publisher.(*countingRecorder); ok {
		h.rec = cr.recorder
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

// instanceOf returns p's tool.Instance value.
func instanceOf(t *testing.T, p tool.Provider) any {
	t.Helper()
	in, ok := p.(tool.Instance)
	if !ok {
		t.Fatalf("the provider %T is not a tool.Instance", p)
	}
	return in.Instance()
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
