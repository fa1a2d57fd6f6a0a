package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The TypeScript SDK client and Node 22 to run it, installed by `npm ci` in
// conformance/ (.ci/run does it).
var (
	nodeBin      = filepath.Join("..", "..", "conformance", "node_modules", ".bin", "node")
	tsClientPath = filepath.Join("..", "..", "conformance", "ts-client.mjs")
)

// conformanceTools are the conformance plugin's tools.
// (test_dynamic_tool comes only when test_trigger_tool_change adds it.)
var conformanceTools = []string{
	"json_schema_2020_12_tool", "test_audio_content", "test_elicitation", "test_elicitation_sep1034_defaults",
	"test_elicitation_sep1330_enums", "test_embedded_resource", "test_error_handling", "test_header_param",
	"test_image_content", "test_input_required_result_capabilities", "test_input_required_result_elicitation",
	"test_input_required_result_list_roots", "test_input_required_result_multi_round",
	"test_input_required_result_multiple_inputs", "test_input_required_result_request_state",
	"test_input_required_result_sampling", "test_input_required_result_tampered_state",
	"test_logging_tool", "test_missing_capability", "test_multiple_content_types", "test_reconnection",
	"test_sampling", "test_simple_text", "test_streaming_elicitation", "test_tool_with_logging",
	"test_tool_with_progress", "test_trigger_prompt_change", "test_trigger_tool_change",
	// The tasks extension's fixtures.
	"confirm_delete", "failing_job", "greet", "multi_input", "protocol_error_job", "slow_compute", "test_tool_with_task",
}

// TestTypeScriptClient drives `plughost serve --http` with the official
// TypeScript SDK client (conformance/ts-client.mjs, which documents its
// steps): initialize, list, call, a list_changed on the GET stream when the
// clock plugin is dropped into the directory, a call cut off mid-stream and
// resumed on a new connection with Last-Event-ID, and DELETE of the session.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	for _, f := range []string{nodeBin, tsClientPath} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v\nthe TypeScript SDK client test needs Node 22 and @modelcontextprotocol/sdk: run `npm ci` in conformance/ (.ci/run does)", err)
		}
	}
	h := startHTTPTestHost(t, "echo", "conformance")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	script, _ := filepath.Abs(tsClientPath)
	cmd := exec.CommandContext(ctx, nodeBin, script, h.url)
	stderr := newLineBuffer()
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Read the script's steps; drop the clock plugin in when it is ready.
	var order []string
	steps := map[string]json.RawMessage{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var s struct{ Step string }
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil || s.Step == "" {
			t.Errorf("ts-client wrote %q, want a JSON step", sc.Bytes())
			continue
		}
		order = append(order, s.Step)
		steps[s.Step] = slices.Clone(sc.Bytes())
		if s.Step == "ready-for-plugin" {
			copyPlugin(t, "clock", h.pluginDir, "clock")
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ts-client: %v after steps %v\nts-client stderr:\n%s\nplughost stderr:\n%s", err, order, stderr, h.stderr)
	}
	if diff := cmp.Diff([]string{"initialized", "tools", "echo", "ready-for-plugin", "list_changed", "clock",
		"disconnected", "resumed", "terminated", "done"}, order); diff != "" {
		t.Fatalf("steps (-want +got):\n%s", diff)
	}
	step := func(name string, v any) {
		t.Helper()
		if err := json.Unmarshal(steps[name], v); err != nil {
			t.Fatalf("step %s: %v", name, err)
		}
	}

	t.Run("initialize", func(t *testing.T) {
		var got struct {
			SessionID       string `json:"sessionId"`
			ProtocolVersion string `json:"protocolVersion"`
			Server          struct{ Name string }
			Capabilities    struct {
				Tools *struct{ ListChanged bool } `json:"tools"`
			}
		}
		step("initialized", &got)
		if !regexp.MustCompile(`^[\x21-\x7e]{32,}$`).MatchString(got.SessionID) {
			t.Errorf("Mcp-Session-Id %q: want at least 32 visible ASCII characters", got.SessionID)
		}
		if got.ProtocolVersion != "2025-11-25" || got.Server.Name != "plughost" {
			t.Errorf("negotiated %q with server %q, want 2025-11-25 with plughost", got.ProtocolVersion, got.Server.Name)
		}
		if got.Capabilities.Tools == nil || !got.Capabilities.Tools.ListChanged {
			t.Errorf("capabilities do not advertise tools.listChanged: %s", steps["initialized"])
		}
	})

	startTools := append([]string{"echo", "sleep"}, conformanceTools...)
	slices.Sort(startTools)
	t.Run("list and call", func(t *testing.T) {
		var tools struct{ Names []string }
		step("tools", &tools)
		if diff := cmp.Diff(startTools, tools.Names); diff != "" {
			t.Errorf("tools/list (-want +got):\n%s", diff)
		}
		var echo struct{ Result callResult }
		step("echo", &echo)
		if diff := cmp.Diff(callResult{Content: []contentBlock{{Type: "text", Text: "hello from TypeScript"}}}, echo.Result); diff != "" {
			t.Errorf("echo (-want +got):\n%s", diff)
		}
	})

	t.Run("list_changed on the GET stream", func(t *testing.T) {
		var got struct {
			Names         []string
			Notifications int
		}
		step("list_changed", &got)
		want := append(slices.Clone(startTools), "get_current_time")
		slices.Sort(want)
		if diff := cmp.Diff(want, got.Names); diff != "" {
			t.Errorf("tools/list after list_changed (-want +got):\n%s", diff)
		}
		if got.Notifications < 1 {
			t.Errorf("%d list_changed notifications", got.Notifications)
		}
		var clock struct{ Result callResult }
		step("clock", &clock)
		if clock.Result.IsError || len(clock.Result.Content) != 1 ||
			!regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`).MatchString(clock.Result.Content[0].Text) {
			t.Errorf("get_current_time from the new plugin = %+v", clock.Result)
		}
	})

	t.Run("resume with Last-Event-ID", func(t *testing.T) {
		var cut struct {
			Progress    []float64
			LastEventID string `json:"lastEventId"`
			Outcome     struct{ Error string }
		}
		step("disconnected", &cut)
		if !slices.Equal(cut.Progress, []float64{0}) || cut.LastEventID == "" || !strings.Contains(cut.Outcome.Error, "closed") {
			t.Fatalf("the first connection saw progress %v, last event id %q, outcome %q; want [0], an id, and the connection closed",
				cut.Progress, cut.LastEventID, cut.Outcome.Error)
		}
		var got struct {
			Progress       []float64
			ProgressTokens int
			HTTP           []httpExchange
			Result         callResult
		}
		step("resumed", &got)
		// Exactly what the cut-off connection missed, in order: no repeat
		// of the last event it saw, no gap.
		if diff := cmp.Diff([]float64{50, 100}, got.Progress); diff != "" {
			t.Errorf("replayed progress (-want +got):\n%s", diff)
		}
		if got.ProgressTokens != 1 {
			t.Errorf("replayed progress carries %d progress tokens, want the cut-off call's one", got.ProgressTokens)
		}
		want := []httpExchange{{Method: "GET", LastEventID: cut.LastEventID, Status: 200, ContentType: "text/event-stream"}}
		if diff := cmp.Diff(want, got.HTTP); diff != "" {
			t.Errorf("resuming HTTP exchanges (-want +got):\n%s", diff)
		}
		wantResult := callResult{Content: []contentBlock{{Type: "text", Text: "Tool with progress executed successfully: progress 0, 50 and 100 of 100"}}}
		if diff := cmp.Diff(wantResult, got.Result); diff != "" {
			t.Errorf("result delivered after the reconnect (-want +got):\n%s", diff)
		}
	})

	t.Run("DELETE ends the session", func(t *testing.T) {
		var got struct {
			HTTP        []httpExchange
			AfterDelete struct {
				Error string
				Code  int
			}
		}
		step("terminated", &got)
		if len(got.HTTP) != 2 || got.HTTP[0].Method != "DELETE" || got.HTTP[0].Status/100 != 2 ||
			got.HTTP[1].Method != "POST" || got.HTTP[1].Status != 404 {
			t.Errorf("HTTP exchanges = %+v; want DELETE answered 2xx, then a POST with the ended session's id answered 404", got.HTTP)
		}
		if got.AfterDelete.Code != 404 {
			t.Errorf("request after DELETE: %+v, want the SDK's 404 error", got.AfterDelete)
		}
	})
}

// callResult and contentBlock are a CallToolResult as the script reports it.
type callResult struct {
	Content []contentBlock `json:"content"`
	IsError bool           `json:"isError"`
}

type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// httpExchange is one HTTP request of the script and its answer.
type httpExchange struct {
	Method      string `json:"method"`
	LastEventID string `json:"lastEventId"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
}

// httpTestHost is a running `plughost serve --http 127.0.0.1:0`.
type httpTestHost struct {
	url       string // the Streamable HTTP endpoint
	pluginDir string
	stderr    *lineBuffer
}

// startHTTPTestHost starts plughost serving Streamable HTTP on a loopback
// port the kernel picks, over a plugin directory holding plugins, and waits
// until it serves them. Cleanup stops it with SIGTERM (graceful shutdown),
// checks that it exited cleanly, and that no plugin process outlived it.
func startHTTPTestHost(t *testing.T, plugins ...string) *httpTestHost {
	t.Helper()
	h := &httpTestHost{pluginDir: t.TempDir(), stderr: newLineBuffer()}
	for _, p := range plugins {
		copyPlugin(t, p, h.pluginDir, p)
	}
	cmd := exec.Command(bin.plughost, "serve", "--http", "127.0.0.1:0", "--plugins", h.pluginDir,
		"--workspace", t.TempDir(), "--log-level", "debug")
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("SIGTERM: %v", err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("plughost exited after SIGTERM: %v\nstderr:\n%s", err, h.stderr)
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("plughost did not exit within 20s of SIGTERM\nstderr:\n%s", h.stderr)
		}
		if leftover := processesUnder(h.pluginDir); len(leftover) > 0 {
			t.Errorf("plugin processes outlived the host: %v", leftover)
		}
	})

	const serving = "serving MCP over Streamable HTTP: url="
	h.stderr.await(t, serving)
	m := regexp.MustCompile(regexp.QuoteMeta(serving) + `(\S+)`).FindStringSubmatch(h.stderr.String())
	if m == nil {
		t.Fatalf("no URL in plughost's log:\n%s", h.stderr)
	}
	h.url = m[1]
	for _, p := range plugins {
		h.stderr.await(t, fmt.Sprintf("plugin loaded: plugin=%s ", p))
	}
	return h
}
