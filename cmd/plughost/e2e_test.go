package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeStdio drives `plughost serve` with the official go-sdk client:
// initialize, list, a call of each bundled tool, bad arguments, an unknown
// tool and the cancellation of a slow call.
func TestServeStdio(t *testing.T) {
	t.Parallel()
	h := startTestHost(t, "echo", "clock", "files")

	init := h.session.InitializeResult()
	if init.ProtocolVersion != "2025-11-25" || init.ServerInfo.Name != "plughost" {
		t.Errorf("initialize: version %q server %q, want 2025-11-25 plughost", init.ProtocolVersion, init.ServerInfo.Name)
	}
	if init.Capabilities.Tools == nil || !init.Capabilities.Tools.ListChanged {
		t.Errorf("capabilities do not advertise tools.listChanged: %+v", init.Capabilities)
	}
	h.awaitTools("create_file", "echo", "get_current_time", "sleep")

	t.Run("echo", func(t *testing.T) {
		res := h.call("echo", map[string]any{"text": "hello, plugin"})
		if res.IsError || text(res) != "hello, plugin" {
			t.Errorf("echo = %q (isError %v), want %q", text(res), res.IsError, "hello, plugin")
		}
	})
	t.Run("clock", func(t *testing.T) {
		res := h.call("get_current_time", map[string]any{"format": "simple"})
		if res.IsError || !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`).MatchString(text(res)) {
			t.Errorf("get_current_time simple = %q (isError %v)", text(res), res.IsError)
		}
		res = h.call("get_current_time", map[string]any{"format": "detailed"})
		if res.IsError || res.StructuredContent == nil {
			t.Errorf("get_current_time detailed = %q (isError %v, structured %v)", text(res), res.IsError, res.StructuredContent)
		}
	})
	t.Run("files writes inside the workspace", func(t *testing.T) {
		res := h.call("create_file", map[string]any{"filename": "notes/today.txt", "content": "hi"})
		if res.IsError {
			t.Fatalf("create_file failed: %s", text(res))
		}
		got, err := os.ReadFile(filepath.Join(h.workspace, "notes", "today.txt"))
		if err != nil || string(got) != "hi" {
			t.Errorf("workspace file = %q, %v; want %q", got, err, "hi")
		}
	})
	t.Run("files refuses to escape", func(t *testing.T) {
		outside := filepath.Join(t.TempDir(), "escape.txt")
		res := h.call("create_file", map[string]any{"filename": outside, "content": "x"})
		if !res.IsError || !strings.Contains(strings.ToLower(text(res)), "absolute") {
			t.Errorf("absolute path: isError %v, %q; want an isError result naming the absolute path", res.IsError, text(res))
		}
		if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written", outside)
		}
	})
	t.Run("invalid arguments are a tool error naming the field", func(t *testing.T) {
		for name, tc := range map[string]struct {
			tool string
			args map[string]any
			want string
		}{
			"missing required": {"echo", map[string]any{}, "text"},
			"wrong type":       {"echo", map[string]any{"text": 42}, "text"},
			"not in enum":      {"get_current_time", map[string]any{"format": "roman"}, "format"},
		} {
			res := h.call(tc.tool, tc.args)
			if !res.IsError || !strings.Contains(text(res), tc.want) {
				t.Errorf("%s: isError %v, %q; want an isError result naming %q", name, res.IsError, text(res), tc.want)
			}
		}
	})
	t.Run("unknown tool is -32602", func(t *testing.T) {
		_, err := h.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("unknown tool: %v, want JSON-RPC error -32602", err)
		}
	})
	t.Run("cancelling a slow call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		params := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}}
		params.SetProgressToken("slow-1")
		done := make(chan error, 1)
		go func() {
			_, err := h.session.CallTool(ctx, params)
			done <- err
		}()
		// The first progress notification proves the plugin is running the call.
		select {
		case p := <-h.progress:
			if p.ProgressToken != "slow-1" {
				t.Errorf("progress token %v, want slow-1", p.ProgressToken)
			}
		case err := <-done:
			t.Fatalf("sleep returned before any progress: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("no progress from sleep within 30s")
		}
		// Meanwhile the host serves other requests.
		if res := h.call("echo", map[string]any{"text": "still here"}); text(res) != "still here" {
			t.Errorf("echo during a slow call = %q", text(res))
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v, want context.Canceled", err)
		}
		// The cancellation reaches the plugin's handler.
		h.stderr.await(t, "sleep cancelled")
	})
}

// TestDirectoryChanges copies plugins into the watched directory and removes
// them: each change reaches the client as list_changed, and a plugin
// offering a tool another already offers is exposed under its prefix,
// while the first keeps the name its clients call (issue 31).
func TestDirectoryChanges(t *testing.T) {
	t.Parallel()
	h := startTestHost(t, "echo")
	h.awaitTools("echo", "sleep")

	copyPlugin(t, "clock", h.pluginDir, "clock")
	h.awaitTools("echo", "sleep", "get_current_time")
	if res := h.call("get_current_time", nil); res.IsError {
		t.Errorf("get_current_time: %s", text(res))
	}

	copyPlugin(t, "clock", h.pluginDir, "clock2")
	h.awaitTools("echo", "sleep", "get_current_time", "clock2__get_current_time")
	for _, name := range []string{"get_current_time", "clock2__get_current_time"} {
		if res := h.call(name, nil); res.IsError {
			t.Errorf("%s: %s", name, text(res))
		}
	}

	if err := os.Remove(filepath.Join(h.pluginDir, "clock2")); err != nil {
		t.Fatal(err)
	}
	h.awaitTools("echo", "sleep", "get_current_time")

	if err := os.Remove(filepath.Join(h.pluginDir, "clock")); err != nil {
		t.Fatal(err)
	}
	h.awaitTools("echo", "sleep")
}

// TestOneListChangedPerBurst drops two plugins into the directory at once,
// then removes both: each burst reaches the client as exactly one
// notifications/tools/list_changed, however long each plugin takes to load.
func TestOneListChangedPerBurst(t *testing.T) {
	t.Parallel()
	h := startTestHost(t) // an empty directory: the first scan changes nothing
	h.awaitTools()

	stage := func(names ...string) {
		for _, name := range names {
			copyPlugin(t, name, h.pluginDir, "."+name)
		}
		for _, name := range names {
			if err := os.Rename(filepath.Join(h.pluginDir, "."+name), filepath.Join(h.pluginDir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	stage("echo", "clock")
	h.awaitTools("echo", "sleep", "get_current_time")
	// The list can be complete before its notification is written; the
	// second burst starts only once the first one's notification is out, so
	// a slow machine cannot fold the two into one.
	h.awaitListChanged(1)
	for _, name := range []string{"echo", "clock"} {
		if err := os.Remove(filepath.Join(h.pluginDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	h.awaitTools()

	h.close() // the host exits; every line it wrote has been read
	if n := h.wire.notifications("notifications/tools/list_changed"); n != 2 {
		t.Errorf("plughost sent %d list_changed notifications for two bursts, want 2", n)
	}
}

// TestPluginKilledDuringCall SIGKILLs a plugin in the middle of a call: the
// call ends with an isError result, the host keeps serving, the plugin comes
// back, and no zombie or orphan remains.
func TestPluginKilledDuringCall(t *testing.T) {
	t.Parallel()
	h := startTestHost(t, "echo", "clock")
	h.awaitTools("echo", "sleep", "get_current_time")
	echoPath := filepath.Join(h.pluginDir, "echo")
	oldPID := pluginPID(t, echoPath, 0)

	params := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}}
	params.SetProgressToken("doomed")
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := h.session.CallTool(context.Background(), params)
		done <- outcome{res, err}
	}()
	select {
	case <-h.progress:
	case <-time.After(30 * time.Second):
		t.Fatal("no progress from sleep within 30s")
	}
	signalProcess(t, oldPID, syscall.SIGKILL)

	got := <-done
	if got.err != nil {
		t.Fatalf("call on a killed plugin: JSON-RPC error %v, want an isError result", got.err)
	}
	if !got.res.IsError || !strings.Contains(text(got.res), "echo") {
		t.Errorf("call on a killed plugin = %q (isError %v), want an isError result naming the plugin", text(got.res), got.res.IsError)
	}
	// The other plugin kept serving.
	if res := h.call("get_current_time", nil); res.IsError {
		t.Errorf("clock after echo died: %s", text(res))
	}
	// The plugin comes back under a new pid, and the dead one was reaped.
	pluginPID(t, echoPath, oldPID)
	h.awaitTools("echo", "sleep", "get_current_time")
	if res := h.call("echo", map[string]any{"text": "back"}); text(res) != "back" {
		t.Errorf("echo after restart = %q", text(res))
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", oldPID)); !errors.Is(err, os.ErrNotExist) {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", oldPID))
		t.Errorf("killed plugin %d was not reaped: %s", oldPID, stat)
	}
}

// TestHostKilledTakesPluginsWithIt SIGKILLs plughost itself: its plugins get
// no chance to be unloaded, yet none outlives it (parent-death signal).
func TestHostKilledTakesPluginsWithIt(t *testing.T) {
	t.Parallel()
	h := startTestHost(t, "echo", "clock")
	h.awaitTools("echo", "sleep", "get_current_time")
	pids := processesUnder(h.pluginDir)
	if len(pids) != 2 {
		t.Fatalf("plugin processes = %v, want 2", pids)
	}
	signalProcess(t, h.cmd.Process.Pid, syscall.SIGKILL)
	<-h.exited
	h.closed = true // nothing left to close gracefully
	h.session.Close()
	deadline := time.Now().Add(10 * time.Second)
	for len(processesUnder(h.pluginDir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("plugins outlived the killed host: %v", processesUnder(h.pluginDir))
		}
		time.Sleep(10 * time.Millisecond) // polling /proc: there is no event to await
	}
}
