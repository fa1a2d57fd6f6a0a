package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What plughost leaves on disk: its plugins' sockets and tmp directories
// live in one run directory per host process (package rundir), under
// $XDG_RUNTIME_DIR here.

// runHost is a `plughost serve` over stdio with no client: plugins without
// a catalog entry start once to say what they offer, which is all these
// tests need running.
type runHost struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lineBuffer
	exited chan struct{}
	state  string // its XDG_STATE_HOME
}

// startRunHost starts plughost with its run directory under runtimeDir,
// serving the given bundled plugins, and waits until they are loaded.
func startRunHost(t *testing.T, runtimeDir string, plugins ...string) *runHost {
	t.Helper()
	pluginDir, workspace, state := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Chmod(workspace, 0o777); err != nil { // the files plugin runs as uid 65534 under root
		t.Fatal(err)
	}
	for _, p := range plugins {
		copyPlugin(t, p, pluginDir, p)
	}
	h := &runHost{stderr: newLineBuffer(), exited: make(chan struct{}), state: state}
	h.cmd = exec.Command(bin.plughost, "serve", "--plugins", pluginDir, "--workspace", workspace)
	h.cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtimeDir, "XDG_DATA_HOME="+t.TempDir(),
		"XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+state)
	h.cmd.Stderr = h.stderr
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() {
		h.cmd.Process.Kill()
		<-h.exited
	})
	for _, p := range plugins {
		h.stderr.await(t, "plugin loaded: plugin="+p+" ")
	}
	return h
}

// runDir is the run directory of h under runtimeDir, named after its pid.
func (h *runHost) runDir(t *testing.T, runtimeDir string) string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(runtimeDir, fmt.Sprintf("plughost-%d-*", h.cmd.Process.Pid)))
	if err != nil || len(matches) != 1 {
		t.Fatalf("run directories of pid %d under %s: %q (%v), want one", h.cmd.Process.Pid, runtimeDir, matches, err)
	}
	return matches[0]
}

// await waits for h's exit, failing after a minute (a hang guard).
func (h *runHost) await(t *testing.T) {
	t.Helper()
	select {
	case <-h.exited:
	case <-time.After(time.Minute):
		t.Fatalf("plughost did not exit within a minute\nstderr:\n%s", h.stderr)
	}
}

// shortTempDir is a new directory under the system tmp with a short path,
// removed at the end of the test: a unix socket's path is at most 107
// bytes, and t.TempDir's with the run directory and go-plugin's names in
// it would be longer.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// A host killed with SIGKILL leaves its run directory (sockets, tmp
// directories); the next host's start removes it, and leaves alone the
// one of a host still running.
func TestKilledHostsRunDirIsSwept(t *testing.T) {
	t.Parallel()
	runtimeDir := shortTempDir(t)
	dead, live := startRunHost(t, runtimeDir, "echo"), startRunHost(t, runtimeDir, "echo")
	deadDir, liveDir := dead.runDir(t, runtimeDir), live.runDir(t, runtimeDir)
	signalProcess(t, dead.cmd.Process.Pid, syscall.SIGKILL)
	dead.await(t)
	if left := entries(t, deadDir); len(left) == 0 {
		t.Fatalf("the killed host's run directory %s is empty: its plugin's socket and tmp directories should be left", deadDir)
	}

	next := startRunHost(t, runtimeDir, "echo")
	next.stderr.await(t, "removed the run directory of a plughost that died: dir="+deadDir)
	if _, err := os.Stat(deadDir); !os.IsNotExist(err) {
		t.Errorf("the killed host's run directory %s is still there (%v)", deadDir, err)
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("the live host's run directory was touched: %v", err)
	}
	if strings.Contains(next.stderr.String(), liveDir) {
		t.Errorf("the next host named the live host's run directory %s:\n%s", liveDir, next.stderr)
	}
	for _, h := range []*runHost{live, next} {
		h.stdin.Close()
		h.await(t)
	}
	if left := entries(t, runtimeDir); len(left) != 0 {
		t.Errorf("left in the runtime directory after ordinary stops: %q", left)
	}
}

// aboveInfo matches a log line at WARN or ERROR.
var aboveInfo = regexp.MustCompile(`(?m)^\S+ \[(WARN|ERROR)\]`)

// An ordinary stop, by stdin closing or by SIGTERM, leaves nothing of the
// host's behind (run directory, plugins' tmp directories) and logs
// nothing above INFO.
func TestOrdinaryStopIsClean(t *testing.T) {
	t.Parallel()
	for name, stop := range map[string]func(t *testing.T, h *runHost){
		"stdin closed": func(t *testing.T, h *runHost) { h.stdin.Close() },
		"SIGTERM":      func(t *testing.T, h *runHost) { signalProcess(t, h.cmd.Process.Pid, syscall.SIGTERM) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runtimeDir := shortTempDir(t)
			h := startRunHost(t, runtimeDir, "echo", "clock", "files")
			before := len(h.stderr.String())
			stop(t, h)
			h.await(t)
			if code := h.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("plughost exited with code %d\nstderr:\n%s", code, h.stderr)
			}
			if stopLog := h.stderr.String()[before:]; aboveInfo.MatchString(stopLog) {
				t.Errorf("the stop logged above INFO:\n%s", stopLog)
			}
			if left := entries(t, runtimeDir); len(left) != 0 {
				t.Errorf("left in the runtime directory: %q", left)
			}
			tmps, _ := filepath.Glob(filepath.Join(h.state, "plughost", "plugins", "*", "tmp-*"))
			if len(tmps) != 0 {
				t.Errorf("plugins' tmp directories left in the state directory: %q", tmps)
			}
		})
	}
}
