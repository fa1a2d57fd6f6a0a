package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/plughost/plughost/pluginproto/internal/pb"
)

// serve serves srv over an in-memory connection and returns a Client for it
// and the server, which the test may stop to play a dying plugin.
func serve(t testing.TB, srv pb.PluginServer) (*Client, *grpc.Server) {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	pb.RegisterPluginServer(s, srv)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(lis)
	}()
	cc, err := grpc.NewClient("passthrough:///plugin",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cc.Close()
		s.Stop()
		<-served
	})
	return newClient(context.Background(), pb.NewPluginClient(cc)), s
}

// fake is a plugin server that misbehaves as each test asks.
type fake struct {
	pb.UnimplementedPluginServer
	describe *pb.DescribeResponse
	tools    [][]byte
	call     func(grpc.BidiStreamingServer[pb.CallToolHostMessage, pb.CallToolPluginMessage]) error
	watch    func(grpc.ServerStreamingServer[pb.ToolsChanged]) error
	// calls serves Calls; nil answers UNIMPLEMENTED.
	calls func(grpc.BidiStreamingServer[pb.CallsHostMessage, pb.CallsPluginMessage]) error
}

func (f *fake) Calls(s grpc.BidiStreamingServer[pb.CallsHostMessage, pb.CallsPluginMessage]) error {
	if f.calls == nil {
		return f.UnimplementedPluginServer.Calls(s)
	}
	return f.calls(s)
}

func (f *fake) Describe(context.Context, *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	return f.describe, nil
}

func (f *fake) ListTools(context.Context, *pb.ListToolsRequest) (*pb.ListToolsResponse, error) {
	return &pb.ListToolsResponse{Tools: f.tools}, nil
}

func (f *fake) CallTool(s grpc.BidiStreamingServer[pb.CallToolHostMessage, pb.CallToolPluginMessage]) error {
	if _, err := s.Recv(); err != nil {
		return err
	}
	return f.call(s)
}

func (f *fake) WatchTools(_ *pb.WatchToolsRequest, s grpc.ServerStreamingServer[pb.ToolsChanged]) error {
	return f.watch(s)
}

func TestClientCallErrors(t *testing.T) {
	t.Parallel()
	type stream = grpc.BidiStreamingServer[pb.CallToolHostMessage, pb.CallToolPluginMessage]
	result := func(b string) *pb.CallToolPluginMessage {
		return &pb.CallToolPluginMessage{Msg: &pb.CallToolPluginMessage_Result{Result: []byte(b)}}
	}
	tests := map[string]struct {
		call    func(stream) error
		wantErr error
		wantMsg string
	}{
		"no result": {
			call:    func(stream) error { return nil },
			wantErr: ErrNoResult,
			wantMsg: `call "t": plugin ended the call without a result`,
		},
		"result not JSON": {
			call:    func(s stream) error { return s.Send(result(`{"content":`)) },
			wantErr: ErrInvalidResult,
			wantMsg: `call "t": plugin sent an invalid result: not a JSON object: "{\"content\":"`,
		},
		"result not an object": {
			call:    func(s stream) error { return s.Send(result(`[]`)) },
			wantErr: ErrInvalidResult,
		},
		"empty result": {
			call:    func(s stream) error { return s.Send(result(``)) },
			wantErr: ErrInvalidResult,
		},
		"plugin error status": {
			call:    func(stream) error { return errors.New("handler exploded") },
			wantMsg: `call "t": rpc error: code = Unknown desc = handler exploded`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := serve(t, &fake{call: tc.call})
			_, err := c.CallTool(t.Context(), &CallRequest{Tool: "t"})
			if err == nil {
				t.Fatal("CallTool succeeded, want an error")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantMsg != "" && err.Error() != tc.wantMsg {
				t.Errorf("err = %q, want %q", err, tc.wantMsg)
			}
		})
	}
}

func TestClientCallPluginDies(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var srv *grpc.Server
	c, srv := serve(t, &fake{call: func(s grpc.BidiStreamingServer[pb.CallToolHostMessage, pb.CallToolPluginMessage]) error {
		close(started)
		<-s.Context().Done()
		return s.Context().Err()
	}})
	go func() {
		<-started
		srv.Stop() // the plugin goes away mid-call
	}()
	_, err := c.CallTool(t.Context(), &CallRequest{Tool: "t"})
	if !errors.Is(err, ErrPluginClosed) {
		t.Errorf("err = %v, want ErrPluginClosed", err)
	}
}

// A plugin that sends its result but does not end the stream still gives
// the host its result at once, and its stream is cancelled rather than left
// open.
func TestClientCallEndsStreamHeldOpenAfterResult(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{})
	c, _ := serve(t, &fake{call: func(s grpc.BidiStreamingServer[pb.CallToolHostMessage, pb.CallToolPluginMessage]) error {
		if err := s.Send(&pb.CallToolPluginMessage{Msg: &pb.CallToolPluginMessage_Result{Result: []byte(`{"content":[]}`)}}); err != nil {
			return err
		}
		<-s.Context().Done() // hold the stream open until the host gives up on it
		close(cancelled)
		return nil
	}})
	res, err := c.CallTool(t.Context(), &CallRequest{Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"content":[]}` {
		t.Errorf("result = %s", res)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin's stream was never cancelled")
	}
}

func TestClientCallSkipsUnknownMessagesAndKeepsOrder(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, &fake{call: func(s grpc.BidiStreamingServer[pb.CallToolHostMessage, pb.CallToolPluginMessage]) error {
		for _, m := range []*pb.CallToolPluginMessage{
			{Msg: &pb.CallToolPluginMessage_Log{Log: &pb.LogMessage{Level: "info", Logger: "db", Data: []byte(`1`)}}},
			{}, // a message kind this host does not know
			{Msg: &pb.CallToolPluginMessage_Progress{Progress: &pb.Progress{Progress: 1, Total: 3, Message: "m"}}},
			{Msg: &pb.CallToolPluginMessage_Result{Result: []byte(`{"content":[]}`)}},
		} {
			if err := s.Send(m); err != nil {
				return err
			}
		}
		return nil
	}})
	var got []string
	res, err := c.CallTool(t.Context(), &CallRequest{
		Tool:     "t",
		Progress: func(p, total float64, msg string) { got = append(got, "progress "+msg) },
		Log: func(level, logger string, data json.RawMessage) {
			got = append(got, "log "+level+" "+logger+" "+string(data))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"content":[]}` {
		t.Errorf("result = %s", res)
	}
	if diff := cmp.Diff([]string{"log info db 1", "progress m"}, got); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}

type callsStream = grpc.BidiStreamingServer[pb.CallsHostMessage, pb.CallsPluginMessage]

// recvStarts receives n Starts and returns their call ids by tool name.
func recvStarts(s callsStream, n int) (map[string]uint64, error) {
	ids := make(map[string]uint64)
	for len(ids) < n {
		msg, err := s.Recv()
		if err != nil {
			return nil, err
		}
		ids[msg.GetStart().GetTool()] = msg.GetCallId()
	}
	return ids, nil
}

func sendAll(s callsStream, msgs ...*pb.CallsPluginMessage) error {
	for _, m := range msgs {
		if err := s.Send(m); err != nil {
			return err
		}
	}
	return nil
}

func progressMsg(id uint64, msg string) *pb.CallsPluginMessage {
	return &pb.CallsPluginMessage{CallId: id, Msg: &pb.CallsPluginMessage_Progress{Progress: &pb.Progress{Message: msg}}}
}

func resultMsg(id uint64, b string) *pb.CallsPluginMessage {
	return &pb.CallsPluginMessage{CallId: id, Msg: &pb.CallsPluginMessage_Result{Result: []byte(b)}}
}

// callAsync starts a call and returns where its outcome lands, and its
// progress messages and result (to read once the outcome arrived).
func callAsync(ctx context.Context, c *Client, tool string) (<-chan error, *[]string) {
	errc := make(chan error, 1)
	var got []string
	go func() {
		res, err := c.CallTool(ctx, &CallRequest{Tool: tool, Progress: func(_, _ float64, m string) { got = append(got, m) }})
		if err == nil {
			got = append(got, "result "+string(res))
		}
		errc <- err
	}()
	return errc, &got
}

// On the Calls stream, what a plugin sends for a call after its result, or
// for an id the host never sent, reaches no call; messages of unknown kinds
// are skipped; each call gets its own messages in order.
func TestClientCallsDropsLateAndForeignMessages(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, &fake{calls: func(s callsStream) error {
		ids, err := recvStarts(s, 2)
		if err != nil {
			return err
		}
		a, b := ids["a"], ids["b"]
		if err := sendAll(s,
			progressMsg(a, "a1"),
			resultMsg(a, `{"content":[],"n":"a"}`),
			progressMsg(a, "a late"), // after a's result: dropped
			resultMsg(a, `{"second":"result"}`),
			progressMsg(a+b+100, "nobody's"),  // an id the host never sent
			&pb.CallsPluginMessage{CallId: b}, // a message kind this host does not know
			progressMsg(b, "b1"),
		); err != nil {
			return err
		}
		// b is still running: a later call starts on the same stream.
		ids, err = recvStarts(s, 1)
		if err != nil {
			return err
		}
		if err := sendAll(s, resultMsg(b, `{"content":[],"n":"b"}`), resultMsg(ids["c"], `{"content":[],"n":"c"}`)); err != nil {
			return err
		}
		<-s.Context().Done()
		return nil
	}})
	errA, gotA := callAsync(t.Context(), c, "a")
	errB, gotB := callAsync(t.Context(), c, "b")
	if err := <-errA; err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(t.Context(), &CallRequest{Tool: "c"})
	if err != nil || string(res) != `{"content":[],"n":"c"}` {
		t.Fatalf("call c = %s, %v", res, err)
	}
	if err := <-errB; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a1", `result {"content":[],"n":"a"}`}, *gotA); diff != "" {
		t.Errorf("call a (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b1", `result {"content":[],"n":"b"}`}, *gotB); diff != "" {
		t.Errorf("call b (-want +got):\n%s", diff)
	}
	c.mux.mu.Lock()
	defer c.mux.mu.Unlock()
	if n := len(c.mux.cur.calls); n != 0 {
		t.Errorf("%d calls still registered on the stream after all finished", n)
	}
}

// The errors of the Calls stream match CallTool's: an unknown tool, an
// invalid result, and a broken stream failing every call in flight.
func TestClientCallsErrors(t *testing.T) {
	t.Parallel()
	t.Run("call errors", func(t *testing.T) {
		t.Parallel()
		c, _ := serve(t, &fake{calls: func(s callsStream) error {
			for {
				msg, err := s.Recv()
				if err != nil {
					return nil
				}
				id := msg.GetCallId()
				var out *pb.CallsPluginMessage
				switch msg.GetStart().GetTool() {
				case "unknown":
					out = &pb.CallsPluginMessage{CallId: id, Msg: &pb.CallsPluginMessage_Error{Error: &pb.CallError{Code: uint32(codes.NotFound), Message: `unknown tool "unknown"`}}}
				case "invalid":
					out = resultMsg(id, `[]`)
				default:
					out = &pb.CallsPluginMessage{CallId: id, Msg: &pb.CallsPluginMessage_Error{Error: &pb.CallError{Code: uint32(codes.InvalidArgument), Message: "bad start"}}}
				}
				if err := s.Send(out); err != nil {
					return err
				}
			}
		}})
		for tool, want := range map[string]string{
			"unknown": `call "unknown": unknown tool: unknown tool "unknown"`,
			"invalid": `call "invalid": plugin sent an invalid result: not a JSON object: "[]"`,
			"other":   `call "other": rpc error: code = InvalidArgument desc = bad start`,
		} {
			_, err := c.CallTool(t.Context(), &CallRequest{Tool: tool})
			if err == nil || err.Error() != want {
				t.Errorf("call %s: err = %v, want %s", tool, err, want)
			}
		}
		if !c.mux.usable() {
			t.Error("the Calls stream was dropped after call errors")
		}
	})
	t.Run("stream breaks", func(t *testing.T) {
		t.Parallel()
		c, _ := serve(t, &fake{calls: func(s callsStream) error {
			if _, err := recvStarts(s, 3); err != nil {
				return err
			}
			return errors.New("the plugin gave up")
		}})
		var errs []<-chan error
		for _, tool := range []string{"x", "y", "z"} {
			errc, _ := callAsync(t.Context(), c, tool)
			errs = append(errs, errc)
		}
		for _, errc := range errs {
			if err := <-errc; !errors.Is(err, ErrPluginClosed) || !strings.Contains(err.Error(), "the plugin gave up") {
				t.Errorf("err = %v, want ErrPluginClosed naming the plugin's error", err)
			}
		}
	})
	t.Run("stream ended with calls in flight", func(t *testing.T) {
		t.Parallel()
		c, _ := serve(t, &fake{calls: func(s callsStream) error {
			_, err := recvStarts(s, 1)
			return err
		}})
		_, err := c.CallTool(t.Context(), &CallRequest{Tool: "x"})
		if !errors.Is(err, ErrPluginClosed) {
			t.Errorf("err = %v, want ErrPluginClosed", err)
		}
	})
}

// A call's cancellation returns at once and reaches the plugin as a Cancel
// for its id; the plugin's answer after that is dropped.
func TestClientCallsCancel(t *testing.T) {
	t.Parallel()
	cancelled := make(chan uint64, 1)
	c, _ := serve(t, &fake{calls: func(s callsStream) error {
		ids, err := recvStarts(s, 1)
		if err != nil {
			return err
		}
		if err := s.Send(progressMsg(ids["slow"], "running")); err != nil {
			return err
		}
		msg, err := s.Recv()
		if err != nil {
			return err
		}
		if msg.GetCancel() == nil {
			return fmt.Errorf("got %v, want a Cancel", msg)
		}
		cancelled <- msg.GetCallId()
		if err := s.Send(resultMsg(ids["slow"], `{"content":[],"too":"late"}`)); err != nil {
			return err
		}
		ids, err = recvStarts(s, 1)
		if err != nil {
			return err
		}
		return s.Send(resultMsg(ids["next"], `{"content":[]}`))
	}})
	ctx, cancel := context.WithCancel(t.Context())
	var once sync.Once
	_, err := c.CallTool(ctx, &CallRequest{Tool: "slow", Progress: func(float64, float64, string) { once.Do(cancel) }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if id := <-cancelled; id != 1 {
		t.Errorf("Cancel for call %d, want 1", id)
	}
	if res, err := c.CallTool(t.Context(), &CallRequest{Tool: "next"}); err != nil || string(res) != `{"content":[]}` {
		t.Errorf("next call = %s, %v", res, err)
	}
}

// A plugin that floods a call with progress while its caller is busy
// cannot grow the host's queue past maxQueued messages or maxQueuedBytes;
// the result still arrives.
func TestClientCallsBoundsABusyCallsQueue(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		sent  int    // progress messages the plugin sends
		msg   string // each one's message
		limit int    // at most one batch taken before the callback blocked, plus the bound
	}{
		"many small": {sent: 3 * maxQueued, msg: "p", limit: 2 * maxQueued},
		"few large":  {sent: 64, msg: strings.Repeat("x", 256<<10), limit: 2 * maxQueuedBytes / (256 << 10)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := serve(t, &fake{calls: func(s callsStream) error {
				ids, err := recvStarts(s, 1)
				if err != nil {
					return err
				}
				for range tc.sent {
					if err := s.Send(progressMsg(ids["flood"], tc.msg)); err != nil {
						return err
					}
				}
				if err := s.Send(resultMsg(ids["flood"], `{"content":[]}`)); err != nil {
					return err
				}
				ids, err = recvStarts(s, 1)
				if err != nil {
					return err
				}
				return s.Send(resultMsg(ids["after"], `{"content":[]}`))
			}})
			got := 0
			res, err := c.CallTool(t.Context(), &CallRequest{Tool: "flood", Progress: func(float64, float64, string) {
				if got++; got == 1 {
					// Stay busy until the host has read everything the plugin
					// sent for this call: a later call's result comes after it.
					if _, err := c.CallTool(t.Context(), &CallRequest{Tool: "after"}); err != nil {
						t.Errorf("call after the flood: %v", err)
					}
				}
			}})
			if err != nil || string(res) != `{"content":[]}` {
				t.Fatalf("CallTool = %s, %v", res, err)
			}
			if got > tc.limit {
				t.Errorf("%d of %d progress messages delivered, want at most %d", got, tc.sent, tc.limit)
			}
		})
	}
}

// Large arguments take a CallTool stream of their own.
func TestClientCallsLargeArgumentsUseCallTool(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, &fake{
		calls: func(s callsStream) error { return errors.New("Calls used for large arguments") },
		call: func(s grpc.BidiStreamingServer[pb.CallToolHostMessage, pb.CallToolPluginMessage]) error {
			return s.Send(&pb.CallToolPluginMessage{Msg: &pb.CallToolPluginMessage_Result{Result: []byte(`{"content":[]}`)}})
		},
	})
	big := json.RawMessage(`{"s":"` + strings.Repeat("x", maxMuxArgs) + `"}`)
	if _, err := c.CallTool(t.Context(), &CallRequest{Tool: "t", Arguments: big}); err != nil {
		t.Fatal(err)
	}
}

func TestClientDescribe(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, &fake{describe: &pb.DescribeResponse{Name: "future", Version: "9", ContractVersion: 2}})
	d, err := c.Describe(t.Context(), "host-1")
	if !errors.Is(err, ErrContractVersion) || !strings.Contains(err.Error(), `plugin "future" speaks contract version 2, this host speaks 1`) {
		t.Errorf("err = %v, want ErrContractVersion naming both versions", err)
	}
	if diff := cmp.Diff(Description{Name: "future", Version: "9", ContractVersion: 2}, d); diff != "" {
		t.Errorf("description (-want +got):\n%s", diff)
	}
}

func TestClientListToolsRejectsNonObjects(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, &fake{tools: [][]byte{[]byte(`{"name":"a"}`), []byte(`nope`)}})
	_, err := c.ListTools(t.Context())
	if err == nil || !strings.Contains(err.Error(), "tool 1 is not a JSON object") {
		t.Errorf("err = %v, want one naming tool 1", err)
	}
}

func TestClientWatchToolsEnds(t *testing.T) {
	t.Parallel()
	t.Run("context cancelled", func(t *testing.T) {
		t.Parallel()
		c, _ := serve(t, &fake{watch: func(s grpc.ServerStreamingServer[pb.ToolsChanged]) error {
			<-s.Context().Done()
			return nil
		}})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := c.WatchTools(ctx, func() {}); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("plugin ends the watch", func(t *testing.T) {
		t.Parallel()
		c, _ := serve(t, &fake{watch: func(s grpc.ServerStreamingServer[pb.ToolsChanged]) error {
			return s.Send(&pb.ToolsChanged{})
		}})
		n := 0
		err := c.WatchTools(t.Context(), func() { n++ })
		if !errors.Is(err, ErrPluginClosed) || n != 1 {
			t.Errorf("err = %v after %d changes, want ErrPluginClosed after 1", err, n)
		}
	})
}

// TestServerWatchAnnouncesUnlistedChanges checks that a change made between
// the host's ListTools and its WatchTools is not lost, and that each change
// is announced once.
func TestServerWatchAnnouncesUnlistedChanges(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.AddTool(Tool{Name: "a"}, nopHandler) // before serving: the host will list it
	c, _ := serve(t, newServer(p))

	if _, err := c.ListTools(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.AddTool(Tool{Name: "b"}, nopHandler) // not yet listed, no watch open
	changes := make(chan struct{}, 8)
	ctx, cancel := context.WithCancel(t.Context())
	watchDone := make(chan error, 1)
	go func() { watchDone <- c.WatchTools(ctx, func() { changes <- struct{}{} }) }()
	select {
	case <-changes:
	case <-time.After(10 * time.Second):
		t.Fatal("no change announced for a tool added before the watch opened")
	}
	cancel()
	if err := <-watchDone; !errors.Is(err, context.Canceled) {
		t.Errorf("WatchTools = %v, want context.Canceled", err)
	}

	// Listed everything; the next change is announced once, whether it
	// happens before or after the new watch opens.
	if _, err := c.ListTools(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	go func() { watchDone <- c.WatchTools(ctx, func() { changes <- struct{}{} }) }()
	p.RemoveTool("a")
	select {
	case <-changes:
	case <-time.After(10 * time.Second):
		t.Fatal("RemoveTool was not announced")
	}
	tools, err := c.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b"}, toolNames(t, tools)); diff != "" {
		t.Errorf("tools after RemoveTool (-want +got):\n%s", diff)
	}
	cancel()
	<-watchDone
	if len(changes) != 0 {
		t.Errorf("%d extra change notifications", len(changes))
	}
}

func TestServerRejectsCallWithoutStart(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	c, _ := serve(t, newServer(p))
	stream, err := c.rpc.CallTool(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&pb.CallToolHostMessage{}); err != nil {
		t.Fatal(err)
	}
	_, err = stream.Recv()
	if err == nil || !strings.Contains(err.Error(), "the first message of a call must be CallStart") {
		t.Errorf("err = %v, want InvalidArgument naming CallStart", err)
	}
}

// BenchmarkCallTool measures one echo call through the client and the
// plugin's server over an in-memory connection (no process hop), on the
// Calls stream.
func BenchmarkCallTool(b *testing.B) {
	benchmarkCallTool(b, false)
}

// BenchmarkCallToolPerCallStream is BenchmarkCallTool with a plugin that
// does not serve Calls: a CallTool stream per call.
func BenchmarkCallToolPerCallStream(b *testing.B) {
	benchmarkCallTool(b, true)
}

func benchmarkCallTool(b *testing.B, noCalls bool) {
	p := New("bench", "0")
	p.AddTool(Tool{Name: "echo"}, func(_ context.Context, r *Request) (*Result, error) {
		return &Result{Content: []Content{RawContent(r.Arguments)}}, nil
	})
	srv := newServer(p)
	srv.noCalls = noCalls
	c, _ := serve(b, srv)
	req := &CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"type":"text","text":"hello"}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CallTool(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}
