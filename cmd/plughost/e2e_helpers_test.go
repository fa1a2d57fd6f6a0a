package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bin holds the binaries TestMain builds: plughost and each bundled plugin.
var bin struct {
	dir      string
	plughost string
	plugins  map[string]string // name → path
}

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "plughost-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// No test reads the configuration of the user running the tests
	// (~/.config/plughost/plughost.hcl, or $PLUGHOST_CONFIG's): every
	// plughost these tests start inherits this environment.
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	os.Unsetenv("PLUGHOST_CONFIG")
	bin.dir = dir
	bin.plughost = filepath.Join(dir, "plughost")
	bin.plugins = map[string]string{}
	// plughost (under the race detector when the tests are) and the
	// plugins are built at once, two go commands side by side: one go
	// build of many packages links them in parallel, where one go command
	// per binary linked them one after another.
	race := make(chan error, 1)
	go func() {
		args := []string{"build", "-o", bin.plughost}
		if raceEnabled { // the host runs under the race detector when the tests do
			args = append(args, "-race")
		}
		race <- goBuild(append(args, ".")...)
	}()
	plugins := filepath.Join(dir, "plugins")
	if err := goBuild(append([]string{"build", "-o", plugins + string(filepath.Separator)}, slices.Collect(maps.Keys(testPlugins))...)...); err != nil {
		fmt.Fprintln(os.Stderr, "building the plugins:", err)
		return 1
	}
	if err := <-race; err != nil {
		fmt.Fprintln(os.Stderr, "building plughost:", err)
		return 1
	}
	for pkg, name := range testPlugins {
		path := filepath.Join(plugins, name)
		if built := filepath.Join(plugins, filepath.Base(pkg)); built != path {
			if err := os.Rename(built, path); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		bin.plugins[name] = path
	}
	return m.Run()
}

// testPlugins are the plugins TestMain builds, by package, and the name
// each is known by in the tests.
var testPlugins = map[string]string{
	"../../plugins/echo": "echo", "../../plugins/clock": "clock", "../../plugins/files": "files",
	"../../plugins/secrets": "secrets", "../../plugins/pii": "pii", "../../plugins/definitions": "definitions",
	// The conformance suite's fixture plugin lives beside the suite; the
	// tool-search corpus's (a server of ../shared/toolsearch by its file
	// name) beside the corpus's loader.
	"../../conformance/plugin": "conformance", "../../internal/toolsearcheval/corpusplugin": "corpus",
	"./internal/askplugin":  "askplugin",  // its tools ask the client
	"./internal/badplugin":  "badplugin",  // its definitions the host refuses (issue 20)
	"./internal/bigplugin":  "bigplugin",  // it asks for more than the host's limits allow
	"./internal/rugplugin":  "rugplugin",  // it changes its tool's description at runtime (issue 17)
	"./internal/hookplugin": "hookplugin", // the guardrails' plugin (issue 33), whose hooks answer as told
	"./internal/otelplugin": "otelplugin", // it exports spans of its own (issue 35)
}

// goBuild runs the go command with args, its errors on our stderr.
func goBuild(args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	return cmd.Run()
}

// copyPlugin copies a built plugin into dir under the given file name,
// writing to a hidden temporary name first and renaming, as an operator's
// deploy script would (the manager ignores dotfiles).
func copyPlugin(t *testing.T, plugin, dir, as string) {
	t.Helper()
	data, err := os.ReadFile(bin.plugins[plugin])
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "."+as+".tmp")
	if err := os.WriteFile(tmp, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, as)); err != nil {
		t.Fatal(err)
	}
}

// testHost is a running `plughost serve` driven by the official go-sdk client.
type testHost struct {
	t         *testing.T
	cmd       *exec.Cmd
	session   *mcp.ClientSession
	pluginDir string
	workspace string
	stderr    *lineBuffer
	wire      *wireCheck

	listChanged chan struct{}                        // one value per notifications/tools/list_changed
	progress    chan *mcp.ProgressNotificationParams // progress notifications
	logs        chan *mcp.LoggingMessageParams       // notifications/message
	exited      chan struct{}                        // closed when the host process has exited
	closed      bool                                 // close has run
}

// startTestHost starts plughost serving pluginDir over stdio and connects the
// go-sdk client to it. Cleanup closes the session, waits for the host to
// exit and checks that no plugin process outlived it.
func startTestHost(t *testing.T, plugins ...string) *testHost {
	t.Helper()
	return startTestHostWith(t, nil, plugins...)
}

// startTestHostWith is startTestHost with serve's further arguments.
func startTestHostWith(t *testing.T, args []string, plugins ...string) *testHost {
	t.Helper()
	dir := t.TempDir()
	for _, p := range plugins {
		copyPlugin(t, p, dir, p)
	}
	return startTestHostIn(t, dir, args)
}

// startTestHostIn is startTestHostWith serving the plugins already in
// pluginDir; env is added to the host's environment (an XDG_CACHE_HOME in
// it replaces the empty catalog cache each host gets).
func startTestHostIn(t *testing.T, pluginDir string, args []string, env ...string) *testHost {
	t.Helper()
	h := &testHost{
		t:           t,
		pluginDir:   pluginDir,
		workspace:   t.TempDir(),
		stderr:      newLineBuffer(),
		listChanged: make(chan struct{}, 100),
		progress:    make(chan *mcp.ProgressNotificationParams, 100),
		logs:        make(chan *mcp.LoggingMessageParams, 100),
		exited:      make(chan struct{}),
	}
	// As root the sandbox runs plugins as uid 65534: the files plugin's
	// workspace must be writable by it, as an operator's would be.
	if err := os.Chmod(h.workspace, 0o777); err != nil {
		t.Fatal(err)
	}
	h.cmd = exec.Command(bin.plughost, append([]string{"serve", "--plugins", h.pluginDir, "--workspace", h.workspace, "--log-level", "debug"}, args...)...)
	h.cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	h.cmd.Env = append(h.cmd.Env, env...) // the last of a name wins
	h.cmd.Stderr = h.stderr
	stdin, err := h.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.cmd.Wait(); close(h.exited) }()

	h.wire = newWireCheck()
	client := mcp.NewClient(&mcp.Implementation{Name: "plughost-e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { h.listChanged <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			h.progress <- r.Params
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { h.logs <- r.Params },
	})
	transport := &mcp.IOTransport{
		Reader: h.wire.fromServer(stdout),
		Writer: h.wire.fromClient(stdin),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	h.session, err = client.Connect(ctx, transport, sessionEra)
	if err != nil {
		h.cmd.Process.Kill()
		t.Fatalf("connect: %v\nstderr:\n%s", err, h.stderr)
	}
	t.Cleanup(h.close)
	return h
}

// close ends the session (closing the host's stdin), waits for the host to
// exit, then checks the wire and that no plugin process is left.
func (h *testHost) close() {
	t := h.t
	if h.closed {
		return
	}
	h.closed = true
	h.session.Close()
	select {
	case <-h.exited:
	case <-time.After(15 * time.Second):
		h.cmd.Process.Kill()
		t.Errorf("plughost did not exit within 15s of stdin closing\nstderr:\n%s", h.stderr)
		<-h.exited
	}
	select {
	case <-h.wire.done:
	case <-time.After(15 * time.Second):
		t.Errorf("plughost's stdout was not closed within 15s of its exit")
	}
	if code := h.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("plughost exited with code %d\nstderr:\n%s", code, h.stderr)
	}
	for _, err := range h.wire.errors() {
		t.Errorf("wire: %v", err)
	}
	if leftover := processesUnder(h.pluginDir); len(leftover) > 0 {
		t.Errorf("plugin processes outlived the host: %v", leftover)
	}
	if t.Failed() {
		t.Logf("plughost stderr:\n%s", h.stderr)
	}
}

// toolNames lists every tool the host exposes, all pages.
func (h *testHost) toolNames(ctx context.Context) []string {
	h.t.Helper()
	var names []string
	for tool, err := range h.session.Tools(ctx, nil) {
		if err != nil {
			h.t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// awaitTools waits until the tool list is exactly want (sorted), re-listing
// after each list_changed notification.
func (h *testHost) awaitTools(want ...string) {
	h.t.Helper()
	slices.Sort(want)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		got := h.toolNames(ctx)
		if slices.Equal(got, want) {
			return
		}
		select {
		case <-h.listChanged:
		case <-ctx.Done():
			h.t.Fatalf("tools = %v, want %v (no further list_changed within 30s)\nstderr:\n%s", got, want, h.stderr)
		}
	}
}

// awaitListChanged waits until plughost has written at least n
// notifications/tools/list_changed.
func (h *testHost) awaitListChanged(n int) {
	h.t.Helper()
	const method = "notifications/tools/list_changed"
	deadline := time.After(30 * time.Second)
	for h.wire.notifications(method) < n {
		select {
		case <-h.listChanged: // the client heard one; count again
		case <-deadline:
			h.t.Fatalf("%d list_changed notifications within 30s, want %d\nstderr:\n%s", h.wire.notifications(method), n, h.stderr)
		}
	}
}

// call calls a tool and returns its result.
func (h *testHost) call(name string, args map[string]any) *mcp.CallToolResult {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		h.t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// text joins the text blocks of a result.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// processesUnder returns the pids of live processes whose executable lies
// in dir.
func processesUnder(dir string) []int {
	return processesWhere(func(proc string) bool {
		exe, err := os.Readlink(filepath.Join(proc, "exe"))
		return err == nil && strings.HasPrefix(exe, dir+string(filepath.Separator))
	})
}

// processesRunning returns the pids of live processes whose command line
// mentions dir (an interpreter's, whose executable lies elsewhere).
func processesRunning(dir string) []int {
	return processesWhere(func(proc string) bool {
		cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline"))
		return err == nil && bytes.Contains(cmdline, []byte(dir))
	})
}

// processesWhere returns the pids of the processes for whose /proc
// directory match holds; a zombie's pid comes negated.
func processesWhere(match func(proc string) bool) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		proc := filepath.Join("/proc", e.Name())
		if !match(proc) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join(proc, "stat")); err == nil && isZombie(stat) {
			pids = append(pids, -pid)
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

func isZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// pluginPID returns the pid of the running plugin executable at path other
// than notPID, waiting for it to appear.
func pluginPID(t *testing.T, path string, notPID int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, pid := range processesUnder(filepath.Dir(path)) {
			exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			if exe == path && pid != notPID {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process runs %s", path)
		}
		time.Sleep(20 * time.Millisecond) // polling /proc: there is no event to await
	}
}

// lineBuffer collects a process's stderr and lets tests await a line.
type lineBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newLineBuffer() *lineBuffer { return &lineBuffer{changed: make(chan struct{})} }

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return len(p), nil
}

func (b *lineBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// installWait bounds a package install in the end-to-end tests: pip runs
// from its wheel (every module compiled at each of its four steps), which
// on a 2-core machine running -race tests beside it took over 40 s.
const installWait = 3 * time.Minute

// await waits until the buffer contains substr (at most 30 s).
func (b *lineBuffer) await(t *testing.T, substr string) {
	t.Helper()
	b.awaitWithin(t, substr, 30*time.Second)
}

// awaitWithin waits at most d until the buffer contains substr.
func (b *lineBuffer) awaitWithin(t *testing.T, substr string, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		b.mu.Lock()
		found, changed := strings.Contains(b.buf.String(), substr), b.changed
		b.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("stderr never said %q:\n%s", substr, b)
		}
	}
}
