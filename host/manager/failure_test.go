package manager

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// levelCount counts the entries of module at level whose message
// contains msg.
func (s *logSink) levelCount(module, level, msg string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.entries {
		if e["@module"] == module && e["@level"] == level && strings.Contains(fmt.Sprint(e["@message"]), msg) {
			n++
		}
	}
	return n
}

// A declared server that exits before answering initialize: its wrapper
// exits with it. The error is the exit and the last lines of its stderr;
// go-plugin's handshake message and its hint (meant for plugin authors)
// are not shown. Options.NextStep gets the error and the stderr, and its
// step is in the status and the log line.
func TestDeclaredServerExitingEarlySaysWhy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wrapper := filepath.Join(t.TempDir(), "wrapper")
	// Fifteen lines of start-up chatter, then the cause, as a server writes
	// them, and the wrapper's own last word.
	writeScript(t, wrapper, `for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo "starting step $i" >&2; done
echo 'Cannot access directory /srv/docs' >&2
echo 'plughost __wrapped: the server exited before answering initialize: exit status 1' >&2
exit 1`)
	writeDecl(t, filepath.Join(dir, "docs.mcp.json"), `{"command":"/bin/true"}`)
	var gotName, gotErr, gotStderr string
	h := start(t, dir, Options{
		Wrapper: []string{wrapper},
		NextStep: func(name, _, errText, stderr string) string {
			gotName, gotErr, gotStderr = name, errText, stderr
			return `add allow_read = ["/srv/docs"]`
		},
	})
	h.ready()
	s := h.status("docs")
	if s.State != StateFailed || s.LastError != "exited while starting: exit status 1" {
		t.Errorf("state %s, LastError %q; want failed, exited while starting: exit status 1", s.State, s.LastError)
	}
	for _, unwanted := range []string{"must be a plughost plugin", "go-plugin", "Unrecognized remote plugin message"} {
		if strings.Contains(s.LastError+s.LastStderr, unwanted) {
			t.Errorf("the error of a declared server mentions %q:\n%s\n%s", unwanted, s.LastError, s.LastStderr)
		}
	}
	wantTail := "…\nstarting step 8\nstarting step 9\nstarting step 10\nstarting step 11\nstarting step 12\nstarting step 13\nstarting step 14\nstarting step 15\n" +
		"Cannot access directory /srv/docs\nplughost __wrapped: the server exited before answering initialize: exit status 1"
	if s.LastStderr != wantTail {
		t.Errorf("LastStderr =\n%s\nwant the last %d lines:\n%s", s.LastStderr, tailLines, wantTail)
	}
	if s.NextStep != `add allow_read = ["/srv/docs"]` || gotName != "docs" || gotErr != s.LastError || gotStderr != s.LastStderr {
		t.Errorf("NextStep %q, given (%q, %q, %q)", s.NextStep, gotName, gotErr, gotStderr)
	}
	e := h.logs.await(t, "test", "plugin failed to load")
	if e["@level"] != "error" || e["next_step"] != `add allow_read = ["/srv/docs"]` || !strings.Contains(fmt.Sprint(e["error"]), "Cannot access directory /srv/docs") {
		t.Errorf("log entry %v: want an error with the stderr and the next step", e)
	}
}

// A native plugin that breaks the handshake keeps go-plugin's message and
// the hint for its author.
func TestNativeBadPluginKeepsTheHandshakeHint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScript(t, filepath.Join(dir, "bad"), "echo 'not a plugin' >&2; exit 1")
	h := start(t, dir, Options{})
	h.ready()
	s := h.status("bad")
	if !strings.Contains(s.LastError, "must be a plughost plugin built for") || !strings.Contains(s.LastError, "exit status 1") || s.LastStderr != "not a plugin" {
		t.Errorf("LastError %q, LastStderr %q: want the handshake hint, the exit and the stderr", s.LastError, s.LastStderr)
	}
}

// A start over its limit names the limit and what sets it, per plugin
// (StartTimeoutFor), and says what was not answered: the go-plugin
// handshake of a native plugin, initialize of a declared server, whose
// stderr so far comes with it.
func TestStartTimeoutNamesItsSetting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScript(t, filepath.Join(dir, "slow"), "exec sleep 60")
	wrapper := filepath.Join(t.TempDir(), "wrapper")
	writeScript(t, wrapper, "echo 'npm warn exec The following package was not found and will be installed' >&2; exec sleep 60")
	writeDecl(t, filepath.Join(dir, "npx.mcp.json"), `{"command":"npx","args":["-y","pkg"]}`)
	h := start(t, dir, Options{
		Wrapper:             []string{wrapper},
		StartTimeout:        300 * time.Millisecond,
		StartTimeoutFor:     func(name string) time.Duration { return map[string]time.Duration{"npx": 600 * time.Millisecond}[name] },
		StartTimeoutSetting: "start_timeout in the plugins block",
	})
	h.ready()
	if s := h.status("slow"); s.LastError != "did not complete the go-plugin handshake within 300ms (start_timeout in the plugins block)" {
		t.Errorf("slow: LastError %q", s.LastError)
	}
	s := h.status("npx")
	if s.LastError != "the server did not answer initialize and list what it offers within 600ms (start_timeout in the plugins block)" {
		t.Errorf("npx: LastError %q", s.LastError)
	}
	if !strings.Contains(s.LastStderr, "will be installed") {
		t.Errorf("npx: LastStderr %q, want what it wrote", s.LastStderr)
	}
}

// A failure is logged whole once per change: a second manager (another
// plughost command) meeting the same failure of the same file logs one
// line at INFO; a different failure is logged whole again; a load
// forgets it, so that the next failure is news.
func TestFailureLoggedOncePerChange(t *testing.T) {
	t.Parallel()
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "failures")
	plugin := filepath.Join(dir, "tp")
	writeScript(t, plugin, "echo 'config.yaml: no such file' >&2; exit 2")
	run := func() *harness {
		h := start(t, dir, Options{FailureDir: cache})
		h.ready()
		return h
	}

	h := run()
	h.logs.await(t, "test", "plugin failed to load")
	if n := h.logs.levelCount("test", "error", "plugin failed to load"); n != 1 {
		t.Errorf("first command: %d errors logged, want 1", n)
	}
	h.stop()

	h = run()
	e := h.logs.await(t, "test", "plugin failed to load")
	if e["@level"] != "info" || !strings.Contains(fmt.Sprint(e["@message"]), "as when last logged") || strings.Contains(fmt.Sprint(e["error"]), "config.yaml") {
		t.Errorf("second command logged %v; want one line at info, without the stderr", e)
	}
	if n := h.logs.levelCount("test", "error", ""); n != 0 {
		t.Errorf("second command: %d errors logged, want none", n)
	}
	if s := h.status("tp"); !strings.Contains(s.LastStderr, "config.yaml") {
		t.Errorf("the status keeps the stderr: %q", s.LastStderr)
	}

	// Another failure: news.
	replaceScript(t, plugin, "echo 'config.yaml: bad syntax' >&2; exit 3")
	h.logs.awaitLevel(t, "error", "plugin failed to load")
	h.stop()

	// It loads: forgotten; the old failure again is news.
	replaceFile(t, pluginV1, plugin)
	h = run()
	h.expect("set", "tp")
	if _, err := os.Stat(filepath.Join(cache, "tp.failure")); !os.IsNotExist(err) {
		t.Errorf("the failure is still remembered after a load: %v", err)
	}
	h.stop()
	replaceScript(t, plugin, "echo 'config.yaml: bad syntax' >&2; exit 3")
	h = run()
	h.logs.awaitLevel(t, "error", "plugin failed to load")
}

// Restarts failing the same way as the first load are logged whole once:
// the first time.
func TestRestartFailingAlikeIsLoggedOnce(t *testing.T) {
	t.Parallel()
	wrapper := filepath.Join(t.TempDir(), "wrapper")
	writeScript(t, wrapper, "echo 'connection refused' >&2; exit 3")
	dir := t.TempDir()
	writeDecl(t, filepath.Join(dir, "far.mcp.json"), `{"url":"https://mcp.example.com/mcp"}`)
	h := start(t, dir, Options{Wrapper: []string{wrapper}, BackoffInitial: time.Millisecond, BackoffMax: 2 * time.Millisecond})
	h.ready()
	h.logs.awaitCount(t, "test", "plugin failed to restart", 3)
	if n := h.logs.levelCount("test", "error", "plugin failed to restart"); n != 0 {
		t.Errorf("%d restart failures logged at error, want none: they fail as the first load did", n)
	}
	if n := h.logs.levelCount("test", "error", "remote server unreachable"); n != 1 {
		t.Errorf("%d first failures logged at error, want 1", n)
	}
}

// awaitLevel waits for an entry of the test logger at level whose
// message contains msg.
func (s *logSink) awaitLevel(t *testing.T, level, msg string) {
	t.Helper()
	deadline := time.NewTimer(waitLong)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		notify := s.notify
		s.mu.Unlock()
		if s.levelCount("test", level, msg) > 0 {
			return
		}
		select {
		case <-notify:
		case <-deadline.C:
			t.Fatalf("no %s entry containing %q", level, msg)
		}
	}
}

// replaceScript replaces the script at path by a new file (a new inode:
// a change the manager sees).
func replaceScript(t *testing.T, path, body string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "new") // not in the plugin directory, where it would be a plugin
	writeScript(t, tmp, body)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A plugin that starts well and fails only when called (a server without
// network reaching a host, a path its sandbox hides) says why in its
// isError result: the next step for it is logged at WARN, once per step.
func TestFailedCallsNextStepLoggedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{NextStep: func(name, path, errText, stderr string) string {
		if strings.Contains(errText, "EAI_AGAIN") {
			return "add allow_net to plugin " + name
		}
		return ""
	}})
	p := h.expect("set", "tp").p
	for range 3 {
		if _, err := call(t, p, "fail", `{"text":"getaddrinfo EAI_AGAIN api.github.com"}`); err == nil || !strings.Contains(err.Error(), "EAI_AGAIN") {
			t.Fatalf("fail: %v, want its isError result", err)
		}
	}
	if _, err := call(t, p, "fail", `{"text":"bad argument"}`); err == nil {
		t.Fatal("fail did not fail")
	}
	mustCall(t, p, "pid", `{}`)
	e := h.logs.await(t, "test", "a tool call failed for a reason the operator can fix")
	if e["@level"] != "warn" || e["tool"] != "fail" || e["next_step"] != "add allow_net to plugin tp" {
		t.Errorf("log entry %v", e)
	}
	if n := h.logs.count("test", "a tool call failed"); n != 1 {
		t.Errorf("logged %d times, want once", n)
	}
}

// A plugin whose failed calls name a new reason each time (its results
// are its own to word) gets at most maxAdvised next steps logged, then
// one line saying that advising stopped: what adviseCall remembers, and
// the log, stay bounded.
func TestFailedCallsAdviceIsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{NextStep: func(name, path, errText, stderr string) string {
		return "add allow_net for " + errText
	}})
	p := h.expect("set", "tp").p
	const advised = 16 // maxAdvised
	for i := range advised + 8 {
		if _, err := call(t, p, "fail", fmt.Sprintf(`{"text":"getaddrinfo EAI_AGAIN host%d.example"}`, i)); err == nil {
			t.Fatal("fail did not fail")
		}
	}
	mustCall(t, p, "pid", `{}`)
	if n := h.logs.count("test", "a tool call failed for a reason the operator can fix"); n != advised {
		t.Errorf("%d next steps logged, want %d", n, advised)
	}
	if n := h.logs.count("test", "no more next steps"); n != 1 {
		t.Errorf("the stop logged %d times, want once", n)
	}
}

// A failure with the same error text but another last stderr line or
// next step (the operator fixed one grant; the server now misses another)
// is news: logged whole again, by another command too.
func TestFailureWithNewStderrIsNews(t *testing.T) {
	t.Parallel()
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "failures")
	wrapper := filepath.Join(t.TempDir(), "wrapper")
	writeDecl(t, filepath.Join(dir, "docs.mcp.json"), `{"command":"/bin/true"}`)
	run := func(stderr string) *harness {
		replaceScript(t, wrapper, "echo 'starting at '$$ >&2; echo '"+stderr+"' >&2; exit 1")
		h := start(t, dir, Options{Wrapper: []string{wrapper}, FailureDir: cache, NextStep: func(_, _, _, stderr string) string {
			if strings.Contains(stderr, "/srv/b") {
				return "grant /srv/b" // the same step for the last two runs
			}
			return ""
		}})
		h.ready()
		return h
	}
	for i, c := range []struct{ stderr, level string }{
		{"Cannot access directory /srv/a", "error"},
		{"Cannot access directory /srv/a", "info"},  // the same: a line at info
		{"Cannot access directory /srv/b", "error"}, // a new last line and step
		{"Error: /srv/b is not readable", "error"},  // a new last line, the same step
	} {
		h := run(c.stderr)
		e := h.logs.await(t, "test", "plugin failed to load")
		if e["@level"] != c.level {
			t.Errorf("run %d (%s): logged %v, want it at %s", i, c.stderr, e, c.level)
		}
		if s := h.status("docs"); s.LastError != "exited while starting: exit status 1" {
			t.Errorf("run %d: LastError %q", i, s.LastError)
		}
		h.stop()
	}
}

// TestRecentStderr: a running plugin's status shows its last stderr
// lines from the excerpt's tail alone (bounded by its bytes and by
// recentLines), the newest last, blank lines left out, after "…" once
// earlier lines are gone; nothing else keeps them.
func TestRecentStderr(t *testing.T) {
	e := &excerpt{}
	if got := e.recent(); got != nil {
		t.Fatalf("no stderr: %q, want none", got)
	}
	e.add([]byte("first"), 0)
	e.add([]byte("  "), 0)
	e.add([]byte("second"), 0)
	if got := e.recent(); !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("two lines and a blank one: %q", got)
	}
	for i := range 3 * recentLines {
		e.add(fmt.Appendf(nil, "line %03d", i), 0)
	}
	got := e.recent()
	if len(got) != recentLines+1 || got[0] != "…" || got[len(got)-1] != fmt.Sprintf("line %03d", 3*recentLines-1) {
		t.Fatalf("after %d lines: %d kept, from %q to %q; want … then the last %d", 3*recentLines, len(got), got[0], got[len(got)-1], recentLines)
	}
	if size := len(strings.Join(got, "\n")); size > excerptTail+len("…\n") {
		t.Errorf("kept %d bytes, more than the excerpt's tail (%d)", size, excerptTail)
	}
}
