package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
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
// plugin's server over an in-memory connection (no process hop).
func BenchmarkCallTool(b *testing.B) {
	p := New("bench", "0")
	p.AddTool(Tool{Name: "echo"}, func(_ context.Context, r *Request) (*Result, error) {
		return &Result{Content: []Content{RawContent(r.Arguments)}}, nil
	})
	c, _ := serve(b, newServer(p))
	req := &CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"type":"text","text":"hello"}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CallTool(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}
