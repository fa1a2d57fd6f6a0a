package pluginclient

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
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/pluginproto"
)

// serve serves srv over an in-memory connection and returns a Client for it
// that speaks contract (as if the plugin's handshake had named it), and the
// server, which the test may stop to play a dying plugin.
func serve(t testing.TB, contract uint32, srv pluginpb.PluginServer) (*Client, *grpc.Server) {
	t.Helper()
	return serveLimited(t, contract, srv, nil)
}

// serveLimited is serve with the host's limits (nil: the defaults).
func serveLimited(t testing.TB, contract uint32, srv pluginpb.PluginServer, limits *Limits) (*Client, *grpc.Server) {
	t.Helper()
	return serveOn(t, contract, func(s *grpc.Server) { pluginpb.RegisterPluginServer(s, srv) }, limits)
}

// serveOn serves what register registers over an in-memory connection.
func serveOn(t testing.TB, contract uint32, register func(*grpc.Server), limits *Limits) (*Client, *grpc.Server) {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	register(s)
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
	return newClient(context.Background(), pluginpb.NewPluginClient(cc), contract, limits.withDefaults()), s
}

// fake is a plugin server that misbehaves as each test asks.
type fake struct {
	pluginpb.UnimplementedPluginServer
	describe *pluginpb.DescribeResponse
	tools    [][]byte
	// call serves CallTool (contract 1) after receiving its start.
	call  func(grpc.BidiStreamingServer[pluginpb.CallToolHostMessage, pluginpb.CallToolPluginMessage]) error
	watch func(grpc.ServerStreamingServer[pluginpb.ToolsChanged]) error
	// calls serves CallsV2 (contract 2).
	calls func(callsStream) error
}

type callsStream = grpc.BidiStreamingServer[pluginpb.HostFrame, pluginpb.PluginFrame]

func (f *fake) CallsV2(s callsStream) error {
	return f.calls(s)
}

func (f *fake) Describe(context.Context, *pluginpb.DescribeRequest) (*pluginpb.DescribeResponse, error) {
	return f.describe, nil
}

func (f *fake) ListTools(context.Context, *pluginpb.ListToolsRequest) (*pluginpb.ListToolsResponse, error) {
	return &pluginpb.ListToolsResponse{Tools: f.tools}, nil
}

func (f *fake) CallTool(s grpc.BidiStreamingServer[pluginpb.CallToolHostMessage, pluginpb.CallToolPluginMessage]) error {
	if _, err := s.Recv(); err != nil {
		return err
	}
	return f.call(s)
}

func (f *fake) WatchTools(_ *pluginpb.WatchToolsRequest, s grpc.ServerStreamingServer[pluginpb.ToolsChanged]) error {
	return f.watch(s)
}

// recvStarts receives frames until n Starts came, and returns their call ids
// by tool name.
func recvStarts(s callsStream, n int) (map[string]uint64, error) {
	ids := make(map[string]uint64)
	for len(ids) < n {
		f, err := s.Recv()
		if err != nil {
			return nil, err
		}
		if st := f.GetStart(); st != nil {
			ids[st.GetTool()] = f.GetCallId()
		}
	}
	return ids, nil
}

func sendAll(s callsStream, frames ...*pluginpb.PluginFrame) error {
	for _, f := range frames {
		if err := s.Send(f); err != nil {
			return err
		}
	}
	return nil
}

func progressFrame(id uint64, msg string) *pluginpb.PluginFrame {
	return &pluginpb.PluginFrame{CallId: id, Msg: &pluginpb.PluginFrame_Progress{Progress: &pluginpb.Progress{Message: msg}}}
}

func resultFrame(id uint64, b string) *pluginpb.PluginFrame {
	return &pluginpb.PluginFrame{CallId: id, Msg: &pluginpb.PluginFrame_Result{Result: []byte(b)}}
}

func errorFrame(id uint64, code codes.Code, msg string) *pluginpb.PluginFrame {
	return &pluginpb.PluginFrame{CallId: id, Msg: &pluginpb.PluginFrame_Error{Error: &pluginpb.CallError{Code: uint32(code), Message: msg}}}
}

// callAsync starts a call and returns where its outcome lands, and its
// progress messages and result (to read once the outcome arrived).
func callAsync(ctx context.Context, c *Client, tool string) (<-chan error, *[]string) {
	errc := make(chan error, 1)
	var got []string
	go func() {
		res, err := c.CallTool(ctx, &pluginhost.CallRequest{Tool: tool, Progress: func(_, _ float64, m string) { got = append(got, m) }})
		if err == nil {
			got = append(got, "result "+string(res))
		}
		errc <- err
	}()
	return errc, &got
}

// What a plugin sends for a call after its result, or for an id the host
// never sent, reaches no call; frames of unknown kinds are skipped; each call
// gets its own frames in order.
func TestClientCallsDropsLateAndForeignFrames(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
		ids, err := recvStarts(s, 2)
		if err != nil {
			return err
		}
		a, b := ids["a"], ids["b"]
		if err := sendAll(s,
			progressFrame(a, "a1"),
			resultFrame(a, `{"content":[],"n":"a"}`),
			progressFrame(a, "a late"), // after a's result: dropped
			resultFrame(a, `{"second":"result"}`),
			progressFrame(a+b+100, "nobody's"), // an id the host never sent
			&pluginpb.PluginFrame{CallId: b},   // a frame kind this host does not know
			progressFrame(b, "b1"),
		); err != nil {
			return err
		}
		// b is still running: a later call starts on the same stream.
		ids, err = recvStarts(s, 1)
		if err != nil {
			return err
		}
		if err := sendAll(s, resultFrame(b, `{"content":[],"n":"b"}`), resultFrame(ids["c"], `{"content":[],"n":"c"}`)); err != nil {
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
	res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "c"})
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
	m := c.calls.(*mux)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.cur.calls); n != 0 {
		t.Errorf("%d calls still registered on the stream after all finished", n)
	}
}

// The errors of the CallsV2 stream match those of contract 1's CallTool: an
// unknown tool, an invalid result, and a broken stream failing every call in
// flight.
func TestClientCallsErrors(t *testing.T) {
	t.Parallel()
	t.Run("call errors", func(t *testing.T) {
		t.Parallel()
		c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
			for {
				f, err := s.Recv()
				if err != nil {
					return nil
				}
				id := f.GetCallId()
				var out *pluginpb.PluginFrame
				switch f.GetStart().GetTool() {
				case "unknown":
					out = errorFrame(id, codes.NotFound, `unknown tool "unknown"`)
				case "invalid":
					out = resultFrame(id, `[]`)
				case "panics":
					out = errorFrame(id, codes.Internal, `tool "panics" panicked: boom`)
				default:
					out = errorFrame(id, codes.InvalidArgument, "bad start")
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
			"panics":  `call "panics": the plugin failed running the call: tool "panics" panicked: boom`,
		} {
			_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: tool})
			if err == nil || err.Error() != want {
				t.Errorf("call %s: err = %v, want %s", tool, err, want)
			}
			if failed := errors.Is(err, ErrPluginFailed); failed != (tool == "panics") {
				t.Errorf("call %s: errors.Is(err, ErrPluginFailed) = %v", tool, failed)
			}
		}
		m := c.calls.(*mux)
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.cur == nil {
			t.Error("the CallsV2 stream was dropped after call errors")
		}
	})
	t.Run("stream breaks", func(t *testing.T) {
		t.Parallel()
		c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
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
		c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
			_, err := recvStarts(s, 1)
			return err
		}})
		_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "x"})
		if !errors.Is(err, ErrPluginClosed) {
			t.Errorf("err = %v, want ErrPluginClosed", err)
		}
	})
	t.Run("plugin dies", func(t *testing.T) {
		t.Parallel()
		started := make(chan struct{})
		c, srv := serve(t, 2, &fake{calls: func(s callsStream) error {
			if _, err := recvStarts(s, 1); err != nil {
				return err
			}
			close(started)
			<-s.Context().Done()
			return nil
		}})
		go func() {
			<-started
			srv.Stop() // the plugin goes away mid-call
		}()
		if _, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t"}); !errors.Is(err, ErrPluginClosed) {
			t.Errorf("err = %v, want ErrPluginClosed", err)
		}
	})
}

// A call's cancellation returns at once and reaches the plugin as a Cancel
// for its id; the plugin's answer after that is dropped.
func TestClientCallsCancel(t *testing.T) {
	t.Parallel()
	cancelled := make(chan uint64, 1)
	c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
		ids, err := recvStarts(s, 1)
		if err != nil {
			return err
		}
		if err := sendAll(s, progressFrame(ids["slow"], "running")); err != nil {
			return err
		}
		f, err := s.Recv()
		if err != nil {
			return err
		}
		if f.GetCancel() == nil {
			return fmt.Errorf("got %v, want a Cancel", f)
		}
		cancelled <- f.GetCallId()
		if err := sendAll(s, resultFrame(ids["slow"], `{"content":[],"too":"late"}`)); err != nil {
			return err
		}
		ids, err = recvStarts(s, 1)
		if err != nil {
			return err
		}
		return sendAll(s, resultFrame(ids["next"], `{"content":[]}`))
	}})
	ctx, cancel := context.WithCancel(t.Context())
	var once sync.Once
	_, err := c.CallTool(ctx, &pluginhost.CallRequest{Tool: "slow", Progress: func(float64, float64, string) { once.Do(cancel) }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if id := <-cancelled; id != 1 {
		t.Errorf("Cancel for call %d, want 1", id)
	}
	if res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "next"}); err != nil || string(res) != `{"content":[]}` {
		t.Errorf("next call = %s, %v", res, err)
	}
}

// A plugin that floods a call with progress while its caller is busy
// cannot grow the host's queue past maxQueued frames or maxQueuedBytes;
// the result still arrives.
func TestClientCallsBoundsABusyCallsQueue(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		sent  int    // progress frames the plugin sends
		msg   string // each one's message
		limit int    // at most what was queued before the callback blocked, plus the bound
	}{
		"many small": {sent: 3 * maxQueued, msg: "p", limit: 2 * maxQueued},
		"few large":  {sent: 64, msg: strings.Repeat("x", 256<<10), limit: 2 * maxQueuedBytes / (256 << 10)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
				ids, err := recvStarts(s, 1)
				if err != nil {
					return err
				}
				for range tc.sent {
					if err := sendAll(s, progressFrame(ids["flood"], tc.msg)); err != nil {
						return err
					}
				}
				if err := sendAll(s, resultFrame(ids["flood"], `{"content":[]}`)); err != nil {
					return err
				}
				ids, err = recvStarts(s, 1)
				if err != nil {
					return err
				}
				return sendAll(s, resultFrame(ids["after"], `{"content":[]}`))
			}})
			got := 0
			res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "flood", Progress: func(float64, float64, string) {
				if got++; got == 1 {
					// Stay busy until the host has read everything the plugin
					// sent for this call: a later call's result comes after it.
					if _, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "after"}); err != nil {
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

// Arguments larger than argsChunk travel in pieces: a Start with the first
// chunk and more_arguments, then Arguments frames, the last without more.
// Another call started while they travel goes through on the same stream.
func TestClientCallsChunksLargeArguments(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		size   int // bytes of arguments
		chunks int // frames carrying them
	}{
		"small":                {size: 100, chunks: 1},
		"exactly one chunk":    {size: argsChunk, chunks: 1},
		"one byte more":        {size: argsChunk + 1, chunks: 2},
		"not a chunk boundary": {size: 3*argsChunk + 7, chunks: 4},
		"larger than 4 MiB":    {size: 5 << 20, chunks: 80},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := json.RawMessage(`{"s":"` + strings.Repeat("x", tc.size-8) + `"}`)
			otherDone := make(chan error, 1)
			var c *Client // the plugin's side starts the other call
			c, _ = serve(t, 2, &fake{calls: func(s callsStream) error {
				var got []byte
				var bigID uint64
				chunks, answered := 0, 0
				for answered < 2 {
					f, err := s.Recv()
					if err != nil {
						return err
					}
					more := false
					switch m := f.GetMsg().(type) {
					case *pluginpb.HostFrame_Start:
						if m.Start.GetTool() == "other" {
							answered++
							if err := s.Send(resultFrame(f.GetCallId(), `{"content":[]}`)); err != nil {
								return err
							}
							continue
						}
						bigID, got, more = f.GetCallId(), m.Start.GetArguments(), m.Start.GetMoreArguments()
						go func() {
							_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "other"})
							otherDone <- err
						}()
					case *pluginpb.HostFrame_Arguments:
						got, more = append(got, m.Arguments.GetData()...), m.Arguments.GetMore()
					}
					if chunks++; !more {
						answered++
						if err := s.Send(resultFrame(bigID, fmt.Sprintf(`{"content":[],"size":%d,"chunks":%d,"same":%v}`, len(got), chunks, string(got) == string(args)))); err != nil {
							return err
						}
					}
				}
				<-s.Context().Done()
				return nil
			}})
			res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "big", Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(`{"content":[],"size":%d,"chunks":%d,"same":true}`, tc.size, tc.chunks); string(res) != want {
				t.Errorf("result = %s, want %s", res, want)
			}
			if err := <-otherDone; err != nil {
				t.Errorf("the other call: %v", err)
			}
		})
	}
}

func TestClientDescribe(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, 2, &fake{describe: &pluginpb.DescribeResponse{Name: "future", Version: "9", ContractVersion: 3}})
	d, err := c.Describe(t.Context(), "host-1")
	if !errors.Is(err, ErrContractVersion) || !strings.Contains(err.Error(), `plugin "future" speaks contract version 3, but its handshake named 2`) {
		t.Errorf("err = %v, want ErrContractVersion naming both versions", err)
	}
	if diff := cmp.Diff(Description{Name: "future", Version: "9", ContractVersion: 3}, d); diff != "" {
		t.Errorf("description (-want +got):\n%s", diff)
	}
}

func TestClientListToolsRejectsNonObjects(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, 2, &fake{tools: [][]byte{[]byte(`{"name":"a"}`), []byte(`nope`)}})
	_, err := c.ListTools(t.Context())
	if err == nil || !strings.Contains(err.Error(), "tool 1 is not a JSON object") {
		t.Errorf("err = %v, want one naming tool 1", err)
	}
}

func TestClientWatchEnds(t *testing.T) {
	t.Parallel()
	t.Run("context cancelled", func(t *testing.T) {
		t.Parallel()
		c, _ := serve(t, 2, &fake{watch: func(s grpc.ServerStreamingServer[pluginpb.ToolsChanged]) error {
			<-s.Context().Done()
			return nil
		}})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := c.Watch(ctx, func(Change) {}); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("plugin ends the watch", func(t *testing.T) {
		t.Parallel()
		c, _ := serve(t, 2, &fake{watch: func(s grpc.ServerStreamingServer[pluginpb.ToolsChanged]) error {
			return s.Send(&pluginpb.ToolsChanged{})
		}})
		n := 0
		err := c.Watch(t.Context(), func(Change) { n++ })
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
	p := pluginproto.New("test", "0")
	p.AddTool(pluginproto.Tool{Name: "a"}, nopHandler) // before serving: the host will list it
	c, _ := servePlugin(t, p)

	if _, err := c.ListTools(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.AddTool(pluginproto.Tool{Name: "b"}, nopHandler) // not yet listed, no watch open
	changes := make(chan struct{}, 8)
	ctx, cancel := context.WithCancel(t.Context())
	watchDone := make(chan error, 1)
	go func() { watchDone <- c.Watch(ctx, func(Change) { changes <- struct{}{} }) }()
	select {
	case <-changes:
	case <-time.After(10 * time.Second):
		t.Fatal("no change announced for a tool added before the watch opened")
	}
	cancel()
	if err := <-watchDone; !errors.Is(err, context.Canceled) {
		t.Errorf("Watch = %v, want context.Canceled", err)
	}

	// Listed everything; the next change is announced once, whether it
	// happens before or after the new watch opens.
	if _, err := c.ListTools(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	go func() { watchDone <- c.Watch(ctx, func(Change) { changes <- struct{}{} }) }()
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

// TestClientDescribeAbout checks that a plugin's title and description
// reach the host, within MaxTitle and MaxDescription bytes, cut before a
// rune that does not fit whole.
func TestClientDescribeAbout(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", MaxDescription) // 2 bytes each: the bound falls after a whole rune
	odd := "x" + strings.Repeat("é", MaxTitle)  // the bound falls inside a rune
	tests := map[string]struct {
		title, description string
		want               pluginproto.About
		cut                bool
	}{
		"none":      {want: pluginproto.About{}},
		"within":    {title: "Clock", description: "The time now.", want: pluginproto.About{Title: "Clock", Description: "The time now."}},
		"too long":  {title: odd, description: long, want: pluginproto.About{Title: odd[:MaxTitle-1], Description: long[:MaxDescription]}, cut: true},
		"at bounds": {title: strings.Repeat("t", MaxTitle), want: pluginproto.About{Title: strings.Repeat("t", MaxTitle)}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := serve(t, 2, &fake{describe: &pluginpb.DescribeResponse{Name: "p", ContractVersion: 2, Title: tc.title, Description: tc.description}})
			d, err := c.Describe(t.Context(), "host-1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, d.About); diff != "" {
				t.Errorf("About (-want +got):\n%s", diff)
			}
			if d.Cut != tc.cut {
				t.Errorf("Cut = %v, want %v", d.Cut, tc.cut)
			}
			if !utf8.ValidString(d.About.Title) || !utf8.ValidString(d.About.Description) {
				t.Errorf("About is not valid UTF-8: %q", d.About.Title)
			}
		})
	}
}
