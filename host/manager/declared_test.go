package manager

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeDecl(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil { // not executable: a declaration need not be
		t.Fatal(err)
	}
}

// A declaration is served by the Wrapper command, given the declaration's
// path after the Wrapper's own arguments; its provider is named after the
// file, without the suffix.
func TestDeclaredServerStartsTheWrapper(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	argsFile := filepath.Join(t.TempDir(), "args")
	wrapper := filepath.Join(t.TempDir(), "wrapper")
	// The wrapper records its arguments, and then is the test plugin.
	writeScript(t, wrapper, fmt.Sprintf(`printf '%%s\n' "$@" > %q; exec %q`, argsFile, pluginV1))
	decl := filepath.Join(dir, "srv.mcp.json")
	writeDecl(t, decl, `{"command":"/bin/true"}`)

	h := start(t, dir, Options{Wrapper: []string{wrapper, "__wrapped", "--flag"}})
	h.ready()
	e := h.expect("set", "srv")
	if len(e.tools) != len(v1Tools) {
		t.Errorf("tools of srv = %v, want the test plugin's", e.tools)
	}
	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "__wrapped\n--flag\n"+decl+"\n"; got != want {
		t.Errorf("the wrapper's arguments = %q, want %q", got, want)
	}
	if s := h.status("srv"); s.State != StateRunning || s.Path != decl || s.PID == 0 {
		t.Errorf("status = %+v, want running from %s", s, decl)
	}

	// One added while it runs is loaded as well; renamed as a plugin
	// file would be when its name is not a provider's.
	writeDecl(t, filepath.Join(dir, "my.server.mcp.json"), `{"url":"https://mcp.example.com/mcp"}`)
	h.expect("set", "my_server")
	h.noEvent()
}

// Without a Wrapper, a declaration is not a plugin: nothing is started or
// published, and the other plugins load.
func TestDeclaredServerWithoutWrapper(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeDecl(t, filepath.Join(dir, "srv.mcp.json"), `{"command":"/bin/true"}`)
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{})
	h.ready()
	h.expect("set", "tp")
	h.noEvent()
	for _, s := range h.m.Status() {
		if s.Name != "tp" {
			t.Errorf("status of %s: %+v", s.Name, s)
		}
	}
	if e := h.logs.await(t, "test", "not a plugin"); e["file"] != "srv.mcp.json" || e["reason"] != "a declared server, and this host serves none" {
		t.Errorf("log entry %v, want the declaration skipped with its reason", e)
	}
}

// A remote server whose wrapper fails to load is retried as a crashed
// plugin is, and is never parked; a stdio one that fails to load is
// failed, as a plugin is.
func TestDeclaredServerFailingToLoad(t *testing.T) {
	t.Parallel()
	wrapper := filepath.Join(t.TempDir(), "wrapper")
	writeScript(t, wrapper, "echo 'cannot reach the server' >&2; exit 3")
	opts := func() Options {
		return Options{
			Wrapper:        []string{wrapper},
			BackoffInitial: time.Millisecond,
			BackoffMax:     5 * time.Millisecond,
			CrashLimit:     2,
		}
	}

	t.Run("remote", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeDecl(t, filepath.Join(dir, "far.mcp.json"), `{"url":"https://mcp.example.com/mcp"}`)
		h := start(t, dir, opts())
		h.ready()
		// The first load fails as unreachable, then the restarts fail:
		// twice the crash limit of deaths, and still retrying.
		h.logs.await(t, "test", "remote server unreachable; retrying")
		h.logs.awaitCount(t, "test", "restarting plugin", 2*opts().CrashLimit+1)
		if n := h.logs.count("test", "plugin parked"); n != 0 {
			t.Errorf("parked %d times", n)
		}
		if n := h.logs.count("test", "plugin failed to load"); n != 0 {
			t.Errorf("failed %d times", n)
		}
		h.logs.mu.Lock()
		for _, e := range h.logs.entries { // the wrapper never shook hands: nothing to shut down gracefully
			if e["@level"] == "warn" && e["@message"] == notGraceful {
				t.Errorf("a start that failed before the handshake warned %q", notGraceful)
				break
			}
		}
		h.logs.mu.Unlock()
		s := h.status("far")
		if s.State == StateParked || s.State == StateFailed || s.State == StateRunning {
			t.Errorf("status = %+v, want it retrying", s)
		}
		if s.Restarts < opts().CrashLimit || !strings.Contains(s.LastError, "exit status 3") {
			t.Errorf("status = %+v, want restarts and the wrapper's exit", s)
		}
		h.noEvent()
	})

	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeDecl(t, filepath.Join(dir, "near.mcp.json"), `{"command":"/bin/true"}`)
		h := start(t, dir, opts())
		h.ready()
		h.logs.await(t, "test", "plugin failed to load")
		s := h.status("near")
		if s.State != StateFailed || !strings.Contains(s.LastError, "exit status 3") {
			t.Errorf("status = %+v, want failed with the wrapper's exit", s)
		}
		if n := h.logs.count("test", "remote server unreachable"); n != 0 {
			t.Errorf("retried as remote %d times", n)
		}
		h.noEvent()
	})
}
