package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/plughost/plughost/internal/pluginpb"
)

// On the CallsV2 stream the host sends the client's capabilities and the
// retry's input in the Start, and turns an input_required frame into an
// *InputRequiredError, checked, for CallTool and StartCall alike.
func TestClientCallsCarryInput(t *testing.T) {
	t.Parallel()
	starts := make(chan *pluginpb.CallStart, 16)
	var frames atomic.Int32
	c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
		for {
			f, err := s.Recv()
			if err != nil {
				return nil
			}
			frames.Add(1)
			st := f.GetStart()
			starts <- st
			var out *pluginpb.PluginFrame
			switch {
			case st.GetTool() == "bad":
				out = &pluginpb.PluginFrame{CallId: f.GetCallId(), Msg: &pluginpb.PluginFrame_InputRequired{InputRequired: &pluginpb.InputRequired{Requests: []byte(`{"1":{"method":"ping"}}`)}}}
			case st.GetInput() == nil:
				out = &pluginpb.PluginFrame{CallId: f.GetCallId(), Msg: &pluginpb.PluginFrame_InputRequired{InputRequired: &pluginpb.InputRequired{
					Requests: []byte(`{"1":{"method":"roots/list"}}`), RequestState: "round 1",
				}}}
			default:
				out = resultFrame(f.GetCallId(), `{"content":[]}`)
			}
			if err := s.Send(out); err != nil {
				return err
			}
		}
	}})
	caps := json.RawMessage(`{"roots":{}}`)
	_, err := c.CallTool(t.Context(), &CallRequest{Tool: "t", ClientCapabilities: caps})
	var ir *InputRequiredError
	if !errors.As(err, &ir) || string(ir.Requests) != `{"1":{"method":"roots/list"}}` || ir.State != "round 1" {
		t.Fatalf("round 1: err = %v, want the *InputRequiredError", err)
	}
	in := &Input{Responses: json.RawMessage(`{"1":{"roots":[]}}`), State: ir.State}
	done := make(chan error, 1)
	c.StartCall(t.Context(), &CallRequest{Tool: "t", ClientCapabilities: caps, Input: in}, func(res json.RawMessage, err error) {
		if err == nil && string(res) != `{"content":[]}` {
			err = fmt.Errorf("result %s", res)
		}
		done <- err
	})
	if err := <-done; err != nil {
		t.Fatalf("round 2: %v", err)
	}
	c.StartCall(t.Context(), &CallRequest{Tool: "t"}, func(_ json.RawMessage, err error) { done <- err })
	if err := <-done; !errors.As(err, &ir) {
		t.Errorf("StartCall: err = %v, want an *InputRequiredError", err)
	}
	_, err = c.CallTool(t.Context(), &CallRequest{Tool: "bad"})
	if want := `call "bad": plugin sent an invalid result: input_required: request "1": method "ping" is none of`; !errors.Is(err, ErrInvalidResult) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("an invalid input_required: err = %v, want %s", err, want)
	}
	want := []*pluginpb.CallStart{
		{Tool: "t", Arguments: []byte(`{}`), ClientCapabilities: caps},
		{Tool: "t", Arguments: []byte(`{}`), ClientCapabilities: caps, Input: &pluginpb.Input{Responses: in.Responses, RequestState: "round 1"}},
		{Tool: "t", Arguments: []byte(`{}`), ClientCapabilities: []byte(`{}`)},
		{Tool: "bad", Arguments: []byte(`{}`), ClientCapabilities: []byte(`{}`)},
	}
	var got []*pluginpb.CallStart
	for range want {
		got = append(got, <-starts)
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("starts (-want +got):\n%s", diff)
	}

	// Input that would make the Start too large for the plugin is not sent.
	before := frames.Load()
	huge := &Input{Responses: fmt.Appendf(nil, `{"1":{"text":%q}}`, strings.Repeat("x", 4<<20))}
	_, err = c.CallTool(t.Context(), &CallRequest{Tool: "t", Input: huge})
	if err == nil || !strings.HasPrefix(err.Error(), `call "t": the request takes`) {
		t.Errorf("a 4 MiB input: err = %v", err)
	}
	c.StartCall(t.Context(), &CallRequest{Tool: "t", Input: &Input{Responses: json.RawMessage(`1`)}}, func(_ json.RawMessage, err error) { done <- err })
	if err := <-done; err == nil || err.Error() != `call "t": input responses is not a JSON object: "1"` {
		t.Errorf("responses not an object: err = %v", err)
	}
	if n := frames.Load(); n != before {
		t.Errorf("%d frames sent for calls whose input the plugin could not take", n-before)
	}
}

// The SDK answers a call whose handler asked the client with an
// input_required frame, and runs its retry with the answers.
func TestServerCallsV2InputRequired(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.AddTool(Tool{Name: "roots"}, func(ctx context.Context, r *Request) (*Result, error) {
		roots, err := r.Roots(ctx)
		if err != nil {
			return nil, err
		}
		return TextResult(roots[0].URI), nil
	})
	c, _ := serve(t, 2, newServer(p))
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
	p := New("test", "0")
	p.AddResource(Resource{URI: "x://a", Name: "a"}, readsAs("a"))
	p.AddResourceTemplate(ResourceTemplate{URITemplate: "x://t/{id}", Name: "t"}, readsAs("t"))
	p.Offer(Offers{Prompts: true})
	c := describedClient(t, newServer(p))
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
	p.AddPrompt(Prompt{Name: "p"}, func(context.Context, *PromptGet) (*PromptResult, error) { return &PromptResult{}, nil })
	next(Change{Prompts: true})
	p.ResourceUpdated("x://a") // not subscribed: nothing
	p.RemoveResource("nothing")
	p.RemoveResourceTemplate("x://t/{id}")
	next(Change{Resources: true})

	if err := c.SubscribeResource(t.Context(), "x://a", true); err != nil {
		t.Fatal(err)
	}
	if err := c.SubscribeResource(t.Context(), "x://b", true); !errors.Is(err, ErrUnknownResource) {
		t.Errorf("subscribing to an unknown resource: %v, want ErrUnknownResource", err)
	}
	p.ResourceUpdated("x://a")
	next(Change{Updated: []string{"x://a"}})
	if err := c.SubscribeResource(t.Context(), "x://a", false); err != nil {
		t.Fatal(err)
	}
	p.ResourceUpdated("x://a") // unsubscribed: nothing
	p.AddTool(Tool{Name: "t"}, nopHandler)
	next(Change{Tools: true})
	if len(changes) != 0 {
		t.Errorf("%d extra changes", len(changes))
	}
}
