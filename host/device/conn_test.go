package device

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/tool"
)

func TestPing(t *testing.T) {
	t.Parallel()
	b := startBridge(t, nil)
	d := dial(t, b.addr)
	d.send("##START\x0500000000[0007]##PING##END")
	f := d.expect(TypeStatus, "##INFO:PONG")
	if f.Task != SystemTask || f.Seq != 7 {
		t.Errorf("PONG %v: want the ping's task and sequence", f)
	}
}

// TestFrameTooLarge: a STATUS error, then the connection is closed.
func TestFrameTooLarge(t *testing.T) {
	t.Parallel()
	b := startBridge(t, &Options{MaxFrame: 1000})
	d := dial(t, b.addr)
	d.sendFrame(TypeText, "task1234", 0, strings.Repeat("x", 1001))
	d.expect(TypeStatus, "##ERROR:frame too large: the limit is 1000 bytes of payload; closing")
	d.expectClosed()
}

// TestUnknownType: a STATUS error, and the connection stays.
func TestUnknownType(t *testing.T) {
	t.Parallel()
	b := startBridge(t, nil)
	d := dial(t, b.addr)
	d.sendFrame(Type(0x09), "task1234", 0, "?")
	f := d.expect(TypeStatus, "##ERROR:unknown frame type 0x09")
	if f.Task != "task1234" {
		t.Errorf("error in task %q, want the frame's task", f.Task)
	}
	d.sendFrame(TypeAudio, "task1235", 0, "\x00\x01")
	d.expect(TypeStatus, "##ERROR:AUDIO frames are not supported")
	d.sendFrame(TypeSpeak, "task1236", 0, "hello")
	d.expect(TypeStatus, "##ERROR:SPEAK frames are not supported")
	d.send("##START\x03task1234##END") // malformed: reported, connection stays
	d.expect(TypeStatus, `##ERROR:malformed frame`)
	d.sendFrame(TypeStatus, SystemTask, 0, "##PING")
	d.expect(TypeStatus, "##INFO:PONG")
}

func TestAuth(t *testing.T) {
	t.Parallel()
	tokens := []Token{{Secret: "s3cret"}, {Secret: "other"}}
	// A minute to authenticate, so that a loaded machine does not close
	// these connections before they send AUTH; the timeout has its own
	// bridge below.
	b := startBridge(t, &Options{Tokens: tokens, AuthTimeout: time.Minute})

	t.Run("nothing but AUTH and STATUS before AUTH", func(t *testing.T) {
		d := dial(t, b.addr)
		d.sendFrame(TypeStatus, SystemTask, 0, "##PING")
		d.expect(TypeStatus, "##INFO:PONG")
		d.register("sneaky")
		d.expect(TypeStatus, "##ERROR:not authenticated: send AUTH first")
		d.sendFrame(TypeAuth, SystemTask, 0, "s3cret##voiceid:kitchen box##lang:en##format:pcm")
		d.expect(TypeStatus, "##INFO:AUTH_OK")
		d.register("light")
		b.waitTools("light")
		if got := b.cat.Providers(); !cmp.Equal(got, []string{"device-kitchen-box"}) {
			t.Errorf("providers %v, want the sanitized voice id", got)
		}
		d.nc.Close()
		b.waitTools()
	})
	t.Run("wrong token refused", func(t *testing.T) {
		d := dial(t, b.addr)
		d.sendFrame(TypeAuth, SystemTask, 0, "guess##voiceid:x")
		d.expect(TypeStatus, "##ERROR:authentication failed")
		d.expectClosed()
	})
	t.Run("no AUTH in time", func(t *testing.T) {
		b := startBridge(t, &Options{Tokens: tokens, AuthTimeout: 300 * time.Millisecond})
		d := dial(t, b.addr)
		start := time.Now()
		d.expect(TypeStatus, "##ERROR:no AUTH within 300ms; closing")
		d.expectClosed()
		if el := time.Since(start); el < 250*time.Millisecond {
			t.Errorf("closed after %v, before the AUTH timeout", el)
		}
	})
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	b := startBridge(t, &Options{IdleTimeout: time.Second})
	d := dial(t, b.addr)
	d.sendFrame(TypeStatus, SystemTask, 0, "##PING")
	d.expect(TypeStatus, "##INFO:PONG")
	d.expect(TypeStatus, "##ERROR:idle for 1s; closing")
	d.expectClosed()
}

// call calls a tool through the catalog, as the MCP layer does.
func call(t *testing.T, b *bridge, name, args string) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	return b.cat.CallTool(ctx, &tool.Call{Name: name, Arguments: json.RawMessage(args)})
}

// TestResults: how the device's result becomes an MCP CallToolResult.
func TestResults(t *testing.T) {
	t.Parallel()
	b := startBridge(t, nil)
	d := dial(t, b.addr)
	d.register("svc")
	b.waitTools("svc")
	tests := []struct{ result, want string }{
		{`{"success":true,"data":"2025-01-22 14:30:25"}`, `{"content":[{"type":"text","text":"2025-01-22 14:30:25"}]}`},
		{`{"success":true,"data":{"temp": 21.5}}`, `{"content":[{"type":"text","text":"{\"temp\":21.5}"}],"structuredContent":{"temp":21.5}}`},
		{`{"success":true,"data":"{\"on\":true}"}`, `{"content":[{"type":"text","text":"{\"on\":true}"}],"structuredContent":{"on":true}}`},
		{`{"success":true,"data":[1,2]}`, `{"content":[{"type":"text","text":"[1,2]"}]}`},
		{`{"success":true}`, `{"content":[{"type":"text","text":""}]}`},
		{`{"success":false,"error":"disk full"}`, `{"content":[{"type":"text","text":"disk full"}],"isError":true}`},
		{`{"success":false}`, `{"content":[{"type":"text","text":"the device reported a failure without an error message"}],"isError":true}`},
		{`{"data":"x"}`, `{"content":[{"type":"text","text":"the device sent a malformed result (want {\"success\": true|false, \"data\"|\"error\": …})"}],"isError":true}`},
	}
	for _, tt := range tests {
		done := make(chan struct{})
		var res json.RawMessage
		var err error
		go func() {
			defer close(done)
			res, err = call(t, b, "svc", `{"x":"y"}`)
		}()
		f := d.expect(TypeMCP, `{"type":"call"`)
		var m struct{ Data callPayload }
		json.Unmarshal(f.Payload, &m)
		if string(m.Data.Params) != `{"x":"y"}` || m.Data.Method != "svc" {
			t.Errorf("call frame %v", f)
		}
		d.sendFrame(TypeMCP, f.Task, 0, `{"type":"result","data":{"call_id":"`+m.Data.CallID+`","result":`+tt.result+`}}`)
		<-done
		if err != nil || string(res) != tt.want {
			t.Errorf("result %s:\n got %s, %v\nwant %s", tt.result, res, err, tt.want)
		}
	}
}

// TestArgumentsValidated: arguments that break the registered schema never
// reach the device. The catalog checks them (the one place for client
// calls; the device checks its own text tasks' calls, see TestTextTasks).
func TestArgumentsValidated(t *testing.T) {
	t.Parallel()
	b := startBridge(t, nil)
	d := dial(t, b.addr)
	d.register("svc")
	b.waitTools("svc")
	_, err := call(t, b, "svc", `{"x":7}`)
	if !errors.Is(err, tool.ErrBadArguments) || !strings.Contains(err.Error(), "/x") {
		t.Errorf("got %v; want tool.ErrBadArguments naming /x", err)
	}
	// The next frame the device sees is the answer to this ping, not a call.
	d.sendFrame(TypeStatus, SystemTask, 0, "##PING")
	d.expect(TypeStatus, "##INFO:PONG")
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	b := startBridge(t, &Options{CallTimeout: 100 * time.Millisecond})
	d := dial(t, b.addr)
	d.register("svc")
	b.waitTools("svc")
	_, err := call(t, b, "svc", `{}`)
	if !errors.Is(err, ErrCallTimeout) || !errors.Is(err, tool.ErrTimedOut) || !strings.Contains(err.Error(), "no result for call call_001 within 100ms") {
		t.Fatalf("err = %v, want ErrCallTimeout and tool.ErrTimedOut", err)
	}
	// The late result is reported to the device, which stays connected.
	d.expect(TypeMCP, `{"type":"call"`)
	d.sendFrame(TypeMCP, "mcp00001", 0, `{"type":"result","data":{"call_id":"call_001","result":{"success":true}}}`)
	d.expect(TypeStatus, `##ERROR:result: no call "call_001" is waiting`)
}

// TestDisconnect: a device that goes away takes its tools with it, and its
// calls in flight end with an error naming the disconnect.
func TestDisconnect(t *testing.T) {
	t.Parallel()
	b := startBridge(t, nil)
	d := dial(t, b.addr)
	d.register("a", "b")
	b.waitTools("a", "b")
	errc := make(chan error, 1)
	go func() {
		_, err := call(t, b, "a", `{}`)
		errc <- err
	}()
	d.expect(TypeMCP, `{"type":"call"`)
	d.nc.Close()
	err := <-errc
	if !errors.Is(err, ErrDisconnected) || !errors.Is(err, tool.ErrGone) ||
		err.Error() != `tool "a" of provider "device-1": device disconnected before answering call call_001` {
		t.Errorf("err = %v, want ErrDisconnected and tool.ErrGone naming the tool, device and call", err)
	}
	b.waitTools()
}

// TestRegister: registering again replaces the set; bad services are
// refused with a STATUS error naming them, the good ones kept; two
// devices offering one name are both exposed under their provider prefix.
func TestRegister(t *testing.T) {
	t.Parallel()
	b := startBridge(t, nil)
	d1 := dial(t, b.addr)
	d1.register("get_current_time", "light")
	b.waitTools("get_current_time", "light")
	d1.register("light", "fan")
	b.waitTools("fan", "light")

	d2 := dial(t, b.addr)
	d2.sendFrame(TypeMCP, "mcp00002", 0, `{"type":"register","data":{"services":{
		"light": {"description": "the other light"},
		"bad name!": {},
		"weird": {"parameters": {"type": "string"}},
		"broken": {"parameters": {"type": "object", "properties": {"x": {"type": 7}}}}}}}`)
	f := d2.expect(TypeStatus, "##ERROR:register: ")
	for _, want := range []string{`service "bad name!"`, `service "broken": "parameters" is not a valid JSON Schema`, `service "weird": "parameters" must have "type": "object"`} {
		if !strings.Contains(string(f.Payload), want) {
			t.Errorf("status %q does not mention %q", f.Payload, want)
		}
	}
	names := b.cat.Providers()
	if len(names) != 2 {
		t.Fatalf("providers %v", names)
	}
	// d1's light keeps its name (names are sticky, issue 31); d2's, the
	// newcomer, gets its prefix.
	b.waitTools("fan", "light", names[1]+"__light")

	d2.sendFrame(TypeMCP, "mcp00002", 0, `{"type":"nonsense"}`)
	d2.expect(TypeStatus, `##ERROR:unknown MCP message type "nonsense"`)
	d2.sendFrame(TypeMCP, "mcp00002", 0, `not json`)
	d2.expect(TypeStatus, `##ERROR:MCP frame is not a JSON object`)
}

// TestEscaping: "##END" in arguments cannot end the call frame early.
func TestEscaping(t *testing.T) {
	t.Parallel()
	b := startBridge(t, nil)
	d := dial(t, b.addr)
	d.register("svc")
	b.waitTools("svc")
	go call(t, b, "svc", `{"x":"a##END b"}`)
	f := d.expect(TypeMCP, `{"type":"call"`)
	var m struct{ Data callPayload }
	if err := json.Unmarshal(f.Payload, &m); err != nil {
		t.Fatal(err)
	}
	var args struct{ X string }
	json.Unmarshal(m.Data.Params, &args)
	if args.X != "a##END b" {
		t.Errorf("the device read %q", args.X)
	}
}

func TestClaimName(t *testing.T) {
	t.Parallel()
	s := &Server{names: map[string]*conn{}}
	long := strings.Repeat("v", 40)
	for _, tc := range []struct {
		voice  string
		serial uint64
		want   string
	}{
		{"kitchen box", 1, "device-kitchen-box"},
		{"kitchen box", 2, "device-kitchen-box-2"},
		{"日本", 3, "device-3"},
		{"3", 4, "device-3-4"},
		{long, 5, naming.ForDevice(long)},
		{long, 6, naming.ForDevice(long + "-6")},
	} {
		if got := s.claimName(&conn{serial: tc.serial}, tc.voice); got != tc.want {
			t.Errorf("claimName(%q, serial %d) = %q, want %q", tc.voice, tc.serial, got, tc.want)
		}
	}
}
