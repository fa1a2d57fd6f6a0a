package pluginclient

// The SDK's server (pluginproto) as this client sees it: its CallsV2
// frames, its watch and its refusal of contract 1's CallTool.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/pluginproto"
)

// The SDK answers a call whose handler asked the client with an
// input_required frame, and runs its retry with the answers.
func TestServerCallsV2InputRequired(t *testing.T) {
	t.Parallel()
	p := pluginproto.New("test", "0")
	p.AddTool(pluginproto.Tool{Name: "roots"}, func(ctx context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		roots, err := r.Roots(ctx)
		if err != nil {
			return nil, err
		}
		return pluginproto.TextResult(roots[0].URI), nil
	})
	c, _ := servePlugin(t, p)
	stream, err := c.rpc.CallsV2(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	exchange := func(start *pluginpb.CallStart) *pluginpb.PluginFrame {
		t.Helper()
		if err := stream.Send(&pluginpb.HostFrame{CallId: 1, Msg: &pluginpb.HostFrame_Start{Start: start}}); err != nil {
			t.Fatal(err)
		}
		f, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	caps := []byte(`{"roots":{}}`)
	got := exchange(&pluginpb.CallStart{Tool: "roots", ClientCapabilities: caps})
	want := &pluginpb.PluginFrame{CallId: 1, Msg: &pluginpb.PluginFrame_InputRequired{InputRequired: &pluginpb.InputRequired{Requests: []byte(`{"1":{"method":"roots/list"}}`)}}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("round 1 (-want +got):\n%s", diff)
	}
	got = exchange(&pluginpb.CallStart{Tool: "roots", ClientCapabilities: caps, Input: &pluginpb.Input{Responses: []byte(`{"1":{"roots":[{"uri":"file:///w"}]}}`)}})
	if diff := cmp.Diff(resultFrame(1, `{"content":[{"type":"text","text":"file:///w"}]}`), got, protocmp.Transform()); diff != "" {
		t.Errorf("round 2 (-want +got):\n%s", diff)
	}
	got = exchange(&pluginpb.CallStart{Tool: "roots", ClientCapabilities: caps, Input: &pluginpb.Input{Errors: map[string]*pluginpb.InputError{"1": {Code: -32601, Message: "no"}}}})
	if diff := cmp.Diff(resultFrame(1, `{"content":[{"type":"text","text":"roots/list: the client answered with error -32601: no"}],"isError":true}`), got, protocmp.Transform()); diff != "" {
		t.Errorf("round 2, refused (-want +got):\n%s", diff)
	}
}

// The SDK's watch says which lists changed, and which subscribed resources
// were updated; updates of resources nobody subscribed to are not sent.
func TestServerWatchReportsWhatChanged(t *testing.T) {
	t.Parallel()
	p := pluginproto.New("test", "0")
	p.AddResource(pluginproto.Resource{URI: "x://a", Name: "a"}, readsAs("a"))
	p.AddResourceTemplate(pluginproto.ResourceTemplate{URITemplate: "x://t/{id}", Name: "t"}, readsAs("t"))
	p.Offer(pluginproto.Offers{Prompts: true})
	c := describedPlugin(t, p)
	for _, list := range []func(context.Context) ([]json.RawMessage, error){c.ListResources, c.ListResourceTemplates, c.ListPrompts} {
		if _, err := list(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	changes := make(chan Change, 16)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Watch(ctx, func(ch Change) { changes <- ch }) }()
	defer func() {
		cancel()
		<-done
	}()
	next := func(want Change) {
		t.Helper()
		select {
		case got := <-changes:
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("change (-want +got):\n%s", diff)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no change; want %+v", want)
		}
	}
	p.AddPrompt(pluginproto.Prompt{Name: "p"}, func(context.Context, *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
		return &pluginproto.PromptResult{}, nil
	})
	next(Change{Prompts: true})
	p.ResourceUpdated("x://a") // not subscribed: nothing
	p.RemoveResource("nothing")
	p.RemoveResourceTemplate("x://t/{id}")
	next(Change{Resources: true})

	if err := c.SubscribeResource(t.Context(), "x://a", true); err != nil {
		t.Fatal(err)
	}
	if err := c.SubscribeResource(t.Context(), "x://b", true); !errors.Is(err, pluginproto.ErrUnknownResource) {
		t.Errorf("subscribing to an unknown resource: %v, want pluginproto.ErrUnknownResource", err)
	}
	p.ResourceUpdated("x://a")
	next(Change{Updated: []string{"x://a"}})
	if err := c.SubscribeResource(t.Context(), "x://a", false); err != nil {
		t.Fatal(err)
	}
	p.ResourceUpdated("x://a") // unsubscribed: nothing
	p.AddTool(pluginproto.Tool{Name: "t"}, nopHandler)
	next(Change{Tools: true})
	if len(changes) != 0 {
		t.Errorf("%d extra changes", len(changes))
	}
}

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
			p := pluginproto.New("test", "0")
			p.AddTool(pluginproto.Tool{Name: "echo"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
				var args struct{ Text string }
				if err := r.Bind(&args); err != nil {
					return nil, err
				}
				return pluginproto.TextResult(args.Text), nil
			})
			c, _ := servePlugin(t, p)
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
	c, _ := servePluginAs(t, 1, pluginproto.New("test", "0"))
	stream, err := c.rpc.CallTool(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "CallTool") {
		t.Errorf("err = %v, want Unimplemented", err)
	}
}
