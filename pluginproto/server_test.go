package pluginproto

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/plughost/plughost/internal/pluginpb"
)

// The SDK's side of CallsV2, driven frame by frame: what it answers to
// malformed, cancelled and chunked calls.
func TestServerCallsV2Frames(t *testing.T) {
	t.Parallel()
	start := func(id uint64, tool, args string, more bool) *pluginpb.HostFrame {
		return &pluginpb.HostFrame{CallId: id, Msg: &pluginpb.HostFrame_Start{Start: &pluginpb.CallStart{Tool: tool, Arguments: []byte(args), MoreArguments: more}}}
	}
	chunk := func(id uint64, data string, more bool) *pluginpb.HostFrame {
		return &pluginpb.HostFrame{CallId: id, Msg: &pluginpb.HostFrame_Arguments{Arguments: &pluginpb.ArgumentsChunk{Data: []byte(data), More: more}}}
	}
	cancel := func(id uint64) *pluginpb.HostFrame {
		return &pluginpb.HostFrame{CallId: id, Msg: &pluginpb.HostFrame_Cancel{Cancel: &pluginpb.CallCancel{}}}
	}
	result := func(id uint64, text string) *pluginpb.PluginFrame {
		return resultFrame(id, `{"content":[{"type":"text","text":"`+text+`"}]}`)
	}
	tests := map[string]struct {
		send []*pluginpb.HostFrame
		want []*pluginpb.PluginFrame
	}{
		"empty start": {
			send: []*pluginpb.HostFrame{{CallId: 1, Msg: &pluginpb.HostFrame_Start{}}},
			want: []*pluginpb.PluginFrame{errorFrame(1, codes.NotFound, `unknown tool ""`)},
		},
		"unknown tool": {
			send: []*pluginpb.HostFrame{start(1, "nope", `{}`, false)},
			want: []*pluginpb.PluginFrame{errorFrame(1, codes.NotFound, `unknown tool "nope"`)},
		},
		"unknown frames, cancels and chunks of unknown ids are ignored": {
			send: []*pluginpb.HostFrame{{CallId: 7}, cancel(8), chunk(9, "x", false), start(1, "echo", `{"Text":"ok"}`, false)},
			want: []*pluginpb.PluginFrame{result(1, "ok")},
		},
		"arguments in chunks, interleaved with another call": {
			send: []*pluginpb.HostFrame{
				start(1, "echo", `{"Te`, true), chunk(1, `xt":"ch`, true),
				start(2, "echo", `{"Text":"small"}`, false),
				chunk(1, `unked"}`, false),
			},
			want: []*pluginpb.PluginFrame{result(2, "small"), result(1, "chunked")},
		},
		"arguments all in chunks, the Start's empty": {
			send: []*pluginpb.HostFrame{start(1, "echo", ``, true), chunk(1, `{"Text":"x"}`, false), chunk(1, "ignored", false)},
			want: []*pluginpb.PluginFrame{result(1, "x")},
		},
		"cancelled before its arguments were complete": {
			send: []*pluginpb.HostFrame{start(1, "echo", `{"Te`, true), cancel(1), chunk(1, `xt":"late"}`, false), start(2, "echo", `{}`, false)},
			want: []*pluginpb.PluginFrame{errorFrame(1, codes.Canceled, "cancelled before its arguments were complete"), result(2, "")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := New("test", "0")
			p.AddTool(Tool{Name: "echo"}, func(_ context.Context, r *Request) (*Result, error) {
				var args struct{ Text string }
				if err := r.Bind(&args); err != nil {
					return nil, err
				}
				return TextResult(args.Text), nil
			})
			c, _ := serve(t, 2, newServer(p))
			stream, err := c.rpc.CallsV2(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.send {
				if err := stream.Send(f); err != nil {
					t.Fatal(err)
				}
			}
			got := make(map[uint64]*pluginpb.PluginFrame) // the answers, by call id: handlers run concurrently
			for len(got) < len(tc.want) {
				f, err := stream.Recv()
				if err != nil {
					t.Fatal(err)
				}
				got[f.GetCallId()] = f
			}
			want := make(map[uint64]*pluginpb.PluginFrame)
			for _, f := range tc.want {
				want[f.GetCallId()] = f
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
		})
	}
}

// The SDK serves contract 2 only: CallTool, the call path of contract 1, is
// not served.
func TestServerDoesNotServeCallTool(t *testing.T) {
	t.Parallel()
	c, _ := serve(t, 1, newServer(New("test", "0")))
	stream, err := c.rpc.CallTool(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "CallTool") {
		t.Errorf("err = %v, want Unimplemented", err)
	}
}
