package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/device"
)

// TestDeviceTextTaskThroughClientModel runs `plughost serve --device-listen`
// with a scripted device over TCP and the go-sdk client (whose model is a
// CreateMessageWithToolsHandler): the client calls the device's tool, then
// the device sends a text task, which plughost answers through the client's
// model — a sampling round in which the model calls the device's tool, a
// second one in which it answers — and the device gets the answer as TEXT
// frames of its task, then END. Every line plughost writes to stdout,
// the sampling requests included, is checked against the schema.
func TestDeviceTextTaskThroughClientModel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	stderr := newLineBuffer()
	workspace := t.TempDir()
	os.Chmod(workspace, 0o777)
	cmd := exec.Command(bin.plughost, "serve", "--plugins", t.TempDir(), "--workspace", workspace,
		"--log-level", "debug", "--device-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("plughost did not exit after its stdin closed")
		}
		if t.Failed() {
			t.Logf("plughost stderr:\n%s", stderr)
		}
	}()

	// The model: first it asks for the device's tool, then it answers
	// with what the tool returned.
	type round struct {
		tools    []string
		messages int
		lastRole string
		result   string // the text of a tool_result in the last message
	}
	rounds := make(chan round, 4)
	listChanged := make(chan struct{}, 10)
	wire := newWireCheck()
	client := mcp.NewClient(&mcp.Implementation{Name: "device-e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { listChanged <- struct{}{} },
		CreateMessageWithToolsHandler: func(_ context.Context, r *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			var rd round
			for _, tl := range r.Params.Tools {
				rd.tools = append(rd.tools, tl.Name)
			}
			rd.messages = len(r.Params.Messages)
			last := r.Params.Messages[len(r.Params.Messages)-1]
			rd.lastRole = string(last.Role)
			for _, c := range last.Content {
				if tr, ok := c.(*mcp.ToolResultContent); ok {
					for _, rc := range tr.Content {
						if tc, ok := rc.(*mcp.TextContent); ok {
							rd.result += tc.Text
						}
					}
				}
			}
			rounds <- rd
			if rd.result == "" {
				return &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "scripted", StopReason: "toolUse",
					Content: []mcp.Content{&mcp.ToolUseContent{ID: "use-1", Name: "get_current_time", Input: map[string]any{"format": "simple"}}}}, nil
			}
			return &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "scripted", StopReason: "endTurn",
				Content: []mcp.Content{&mcp.TextContent{Text: "It is " + rd.result + "."}}}, nil
		},
	})
	session, err := client.Connect(ctx, &mcp.IOTransport{Reader: wire.fromServer(stdout), Writer: wire.fromClient(stdin)}, sessionEra)
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("connect: %v", err)
	}
	defer func() {
		session.Close()
		<-exited
		for _, err := range wire.errors() {
			t.Errorf("wire: %v", err)
		}
		if wire.notifications("notifications/cancelled") != 0 {
			t.Error("plughost cancelled a sampling request")
		}
	}()

	// The device bridge logs the address it took.
	stderr.await(t, "accepting devices")
	m := regexp.MustCompile(`accepting devices: addr=(\S+)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no device address in the log:\n%s", stderr)
	}
	conn, err := net.Dial("tcp", m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(f device.Frame) {
		b, err := device.AppendFrame(nil, f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	// The device: it answers each call with the time and hands every
	// other frame to the test.
	frames := make(chan device.Frame, 16)
	go answerCalls(conn, frames)
	send(device.Frame{Type: device.TypeMCP, Task: "mcp00001", Seq: 0, Payload: []byte(
		`{"type":"register","data":{"services":{"get_current_time":{"description":"Get the current time",` +
			`"parameters":{"type":"object","properties":{"format":{"type":"string","enum":["simple","detailed"]}}}}}}}`)})

	// The tool appears (list_changed), and the client can call it.
	for {
		var names []string
		for tl, err := range session.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tl.Name)
		}
		if slices.Contains(names, "get_current_time") {
			break
		}
		select {
		case <-listChanged:
		case <-ctx.Done():
			t.Fatalf("the device's tool never appeared; tools %v", names)
		}
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "get_current_time", Arguments: map[string]any{"format": "simple"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "14:30" || res.IsError {
		t.Errorf("get_current_time = %q (isError %v), want 14:30", got, res.IsError)
	}

	// A text task, in two TEXT frames.
	send(device.Frame{Type: device.TypeText, Task: "task0001", Seq: 0, Payload: []byte("What time ")})
	send(device.Frame{Type: device.TypeText, Task: "task0001", Seq: 1, Payload: []byte("is it?")})
	send(device.Frame{Type: device.TypeEnd, Task: "task0001", Seq: 2, Payload: []byte{}})
	var got []device.Frame
	for len(got) == 0 || got[len(got)-1].Type != device.TypeEnd {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("the device connection ended; frames so far %v", got)
			}
			got = append(got, f)
		case <-ctx.Done():
			t.Fatalf("no END of the task; frames so far %v", got)
		}
	}
	want := []device.Frame{
		{Type: device.TypeText, Task: "task0001", Seq: 0, Payload: []byte("It is 14:30.")},
		{Type: device.TypeEnd, Task: "task0001", Seq: 1, Payload: []byte{}},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("frames to the device (-want +got):\n%s", diff)
	}
	close(rounds)
	var seen []round
	for r := range rounds {
		seen = append(seen, r)
	}
	wantRounds := []round{
		{tools: []string{"get_current_time"}, messages: 1, lastRole: "user"},
		{tools: []string{"get_current_time"}, messages: 3, lastRole: "user", result: "14:30"},
	}
	if diff := cmp.Diff(wantRounds, seen, cmp.AllowUnexported(round{})); diff != "" {
		t.Errorf("sampling rounds (-want +got):\n%s", diff)
	}
	if !strings.Contains(stderr.String(), "sampling=true") {
		t.Errorf("the log does not say the client can sample")
	}
}
