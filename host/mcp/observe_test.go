package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// tracing is mcptest.Echo that names its provider, as the catalog does,
// and keeps the trace context of each call it gets.
type tracing struct {
	mcptest.Echo
	mu    sync.Mutex
	calls [][2]string
	spans int // calls whose context carried a recording span
}

func (c *tracing) StartCall(ctx context.Context, call *tool.Call, done func(json.RawMessage, error)) {
	if call.Name == "nope" {
		done(nil, fmt.Errorf("%w: %q", tool.ErrUnknownTool, call.Name))
		return
	}
	call.Provider = "echo-provider"
	c.mu.Lock()
	c.calls = append(c.calls, [2]string{call.TraceParent, call.TraceState})
	if oteltrace.SpanFromContext(ctx).IsRecording() {
		c.spans++
	}
	c.mu.Unlock()
	c.Echo.StartCall(ctx, call, done)
}

type nopSink struct{}

func (nopSink) Write([]byte) error { return nil }

// OnCallEnd learns of every tools/call with who made it and how it went;
// a valid traceparent reaches the catalog, an invalid one does not; a
// stateless request has no session and names its client from _meta.
func TestOnCallEnd(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ends []CallEnd
	cat := &tracing{}
	srv := NewServer(cat, &Options{OnCallEnd: func(e *CallEnd) {
		mu.Lock()
		defer mu.Unlock()
		c := *e
		c.Arguments = append(json.RawMessage(nil), e.Arguments...)
		ends = append(ends, c)
	}})
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	s := srv.OpenSession(SessionConn{Notify: nopSink{}, Peer: Peer{SessionID: "s1", Remote: "127.0.0.1:9"}})
	defer s.Close()
	ctx := context.Background()
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"tester","version":"2"}}}`), nopSink{})
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nopSink{})
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"traceparent":"`+parent+`","tracestate":"k=v"}}}`), nopSink{})
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","_meta":{"traceparent":"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01","tracestate":"k=v"}}}`), nopSink{})
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}`), nopSink{})
	st := srv.OpenStateless(Peer{Remote: "127.0.0.1:10"})
	defer st.Close()
	st.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},`+
		`"io.modelcontextprotocol/clientInfo":{"name":"lone","version":"3"}}}}`), nopSink{})

	if diff := cmp.Diff([][2]string{{parent, "k=v"}, {"", ""}, {"", ""}}, cat.calls); diff != "" {
		t.Errorf("trace context the catalog got (-want +got):\n%s", diff)
	}
	session := Peer{SessionID: "s1", Remote: "127.0.0.1:9"}
	want := []CallEnd{
		{Tool: "echo", Provider: "echo-provider", Outcome: OutcomeOK, Arguments: json.RawMessage(`{"text":"hi"}`), Peer: session, Client: "tester/2", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{Tool: "echo", Provider: "echo-provider", Outcome: OutcomeOK, Peer: session, Client: "tester/2"},
		{Tool: "nope", Outcome: OutcomeUnknownTool, Peer: session, Client: "tester/2"},
		{Tool: "echo", Provider: "echo-provider", Outcome: OutcomeOK, Arguments: json.RawMessage(`{}`), Peer: Peer{Remote: "127.0.0.1:10"}, Client: "lone/3", Stateless: true},
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, ends, cmpopts.IgnoreFields(CallEnd{}, "Start", "Duration", "ResultSize")); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	for _, e := range ends {
		if e.Start.IsZero() || e.Duration <= 0 || e.ResultSize == 0 {
			t.Errorf("%s: start %v, duration %v, result size %d: want all set", e.Tool, e.Start, e.Duration, e.ResultSize)
		}
	}
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		res       string
		err       error
		cancelled bool
		own       bool
		want      Outcome
	}{
		"ok":             {res: `{"content":[]}`, want: OutcomeOK},
		"tool error":     {res: `{"content":[],"isError":true}`, want: OutcomeToolError},
		"input required": {res: `{"resultType":"input_required"}`, own: true, want: OutcomeInputRequired},
		"cancelled":      {err: context.Canceled, cancelled: true, want: OutcomeCancelled},
		"ctx cancelled":  {err: fmt.Errorf("plugin p: %w", context.Canceled), want: OutcomeCancelled},
		"unknown tool":   {err: fmt.Errorf("%w: %q", tool.ErrUnknownTool, "x"), want: OutcomeUnknownTool},
		"bad arguments":  {err: tool.Errorf(tool.ErrBadArguments, "bad"), want: OutcomeInvalidArguments},
		"timed out":      {err: tool.Errorf(tool.ErrTimedOut, "slow"), want: OutcomeTimeout},
		"gone":           {err: tool.Errorf(tool.ErrGone, "died"), want: OutcomeProviderGone},
		"refused":        {err: tool.Errorf(tool.ErrRefused, "stopping"), want: OutcomeRefused},
		"too large":      {err: tool.Errorf(tool.ErrTooLarge, "big"), want: OutcomeTooLarge},
		"internal":       {err: tool.Errorf(tool.ErrInternal, "panic"), want: OutcomeProviderFailed},
		"untyped":        {err: errors.New("boom"), want: OutcomeProviderFailed},
		"capability":     {err: &tool.CapabilityRequired{Message: "needs sampling"}, want: OutcomeCapabilityRequired},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := outcome(json.RawMessage(tc.res), tc.err, tc.cancelled, tc.own); got != tc.want {
				t.Errorf("outcome = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClientName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, version, want string }{
		{"claude", "1.0", "claude/1.0"},
		{"claude", "", "claude"},
		{"", "", ""},
	} {
		if got := clientName(tc.name, tc.version); got != tc.want {
			t.Errorf("clientName(%q, %q) = %q, want %q", tc.name, tc.version, got, tc.want)
		}
	}
	if got := clientName(string(make([]byte, 500)), "1"); len(got) != maxClientName+len("…") {
		t.Errorf("a 500-byte name became %d bytes, want %d", len(got), maxClientName+len("…"))
	}
}

// In tool search mode, search_tools is the host's own and call_tool is
// reported as the tool it ran, served by that tool's provider.
func TestOnCallEndSearchMode(t *testing.T) {
	t.Parallel()
	forBothTransports(t, func(t *testing.T, c *client) {
		ends := make(chan CallEnd, 4)
		c.srv.onCallEnd = func(e *CallEnd) { ends <- *e }
		callOne(t, c, "search_tools", `"arguments":{"query":"echo"}`)
		callOne(t, c, "call_tool", `"arguments":{"name":"echo","arguments":{"text":"hi"}}`)
		for _, want := range [][2]string{{SearchToolName, HostProvider}, {"echo", "test"}} {
			if e := <-ends; e.Tool != want[0] || e.Provider != want[1] || e.Outcome != OutcomeOK {
				t.Errorf("call ended as %s of %q (%s), want %s of %q (ok)", e.Tool, e.Provider, e.Outcome, want[0], want[1])
			}
		}
	})
}

// flooding is a catalog whose every call sends n progress notifications
// and n logs as fast as it can.
type flooding struct {
	mcptest.Echo
	n int
}

func (c flooding) StartCall(_ context.Context, call *tool.Call, done func(json.RawMessage, error)) {
	call.Provider = "flood-provider"
	for i := range c.n {
		call.Progress(tool.Progress{Progress: float64(i + 1)})
		call.Log(tool.Log{Level: "info", Data: json.RawMessage(`"line"`)})
	}
	done(tool.TextResult("flooded"), nil)
}

// countingSink counts the notifications written to it, by method.
type countingSink struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *countingSink) Write(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := jsonrpc.Member(b, "method"); m != nil {
		s.n[string(m)]++
	}
	return nil
}

// A call's notifications past Options.NotificationRate are dropped, and
// counted in CallEnd; the response is not.
func TestNotificationFloodIsPaced(t *testing.T) {
	t.Parallel()
	const sent, rate = 5000, 10
	var end CallEnd
	srv := NewServer(flooding{n: sent}, &Options{NotificationRate: rate, OnCallEnd: func(e *CallEnd) { end = *e }})
	out := &countingSink{n: map[string]int{}}
	s := srv.OpenSession(SessionConn{Notify: out})
	defer s.Close()
	ctx := context.Background()
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`), out)
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), out)
	start := time.Now()
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","_meta":{"progressToken":"p"}}}`), out)
	elapsed := time.Since(start)

	got := out.n[`"notifications/progress"`] + out.n[`"notifications/message"`]
	// The burst, and what the rate refilled while the call ran.
	allowed := rate + int(elapsed.Seconds()*rate) + 1
	if got == 0 || got > allowed {
		t.Errorf("the client got %d notifications in %v, want 1 to %d", got, elapsed, allowed)
	}
	if end.DroppedNotifications != 2*sent-got || end.Outcome != OutcomeOK {
		t.Errorf("CallEnd: dropped %d, outcome %s; want %d dropped, ok", end.DroppedNotifications, end.Outcome, 2*sent-got)
	}
}

// Options.OnLimit hears of each refusal at a session's limit, on any
// transport: here a message over MaxMessageSize on stdio and a
// subscription over MaxSubscriptions.
func TestOnLimit(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := map[string]int{}
	c := newClient(t, clientOptions{stdio: true, server: Options{MaxMessageSize: 1024, MaxSubscriptions: 1, OnLimit: func(l string) {
		mu.Lock()
		defer mu.Unlock()
		hits[l]++
	}}})
	c.initialize("2025-11-25")
	c.roundtrip(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///a.txt"}}`)
	if out := c.roundtrip(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"file:///b.txt"}}`); len(out) != 1 || !strings.Contains(out[0], "the most allowed") {
		t.Errorf("a second subscription under MaxSubscriptions 1: %q", out)
	}
	if out := c.roundtrip(`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`); len(out) != 1 || !strings.Contains(out[0], "-32600") {
		t.Errorf("a message over MaxMessageSize: %q", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(map[string]int{LimitSubscriptions: 1, LimitMessageSize: 1}, hits); diff != "" {
		t.Errorf("limits hit (-want +got):\n%s", diff)
	}
}

// On stdio the caller is the user running the host: whoever can write to
// its stdin.
func TestOnCallEndStdioCaller(t *testing.T) {
	t.Parallel()
	u, err := user.Current()
	if err != nil {
		t.Skip("no current user:", err)
	}
	got := make(chan Caller, 1)
	srv := NewServer(&tracing{}, &Options{OnCallEnd: func(e *CallEnd) { got <- e.Peer.Caller }})
	in := strings.NewReader(mcptest.InitMsg("2025-11-25") + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}` + "\n")
	if err := srv.ServeStdio(t.Context(), in, io.Discard); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-got:
		if c.Subject != u.Username || c.ClientID != "" {
			t.Errorf("caller %+v, want the local user %q", c, u.Username)
		}
	default:
		t.Fatal("no call ended")
	}
}
