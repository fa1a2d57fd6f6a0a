package pluginclient

// A plugin of the SDK (pluginproto) and this client together: what a call
// carries (caller, input, capabilities, tasks, trace context) reaches the
// handler, and a proxy plugin serves what it declares.

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
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/pluginproto"
)

// Who a request acts for reaches the handler of a call, a read and a
// prompt get, over the contract and in process; nil stays nil.
func TestCallerReachesTheHandlers(t *testing.T) {
	t.Parallel()
	p := pluginproto.New("test", "0")
	p.AddTool(pluginproto.Tool{Name: "whoami"}, func(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		return pluginproto.TextResult(describe(req.Caller)), nil
	})
	p.AddResource(pluginproto.Resource{URI: "who://ami", Name: "whoami"}, func(_ context.Context, r *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
		return pluginproto.TextContents("", describe(r.Caller)), nil
	})
	p.AddPrompt(pluginproto.Prompt{Name: "whoami"}, func(_ context.Context, g *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
		return &pluginproto.PromptResult{Messages: []pluginproto.Message{{Role: "user", Content: pluginproto.Text(describe(g.Caller))}}}, nil
	})
	c, _ := servePlugin(t, p)
	if _, err := c.Describe(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	alice := &pluginproto.Caller{Subject: "alice", ClientID: "cli", Issuer: "https://as", Scopes: []string{"mcp:tools"}, Claims: json.RawMessage(`{"groups":["writers"]}`)}
	for _, who := range []*pluginproto.Caller{alice, nil} {
		want := describe(who)
		for name, get := range map[string]func() (json.RawMessage, error){
			"call over gRPC": func() (json.RawMessage, error) {
				return c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "whoami", Caller: who})
			},
			"call in process": func() (json.RawMessage, error) {
				return pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "whoami", Caller: who})
			},
			"read over gRPC": func() (json.RawMessage, error) {
				return c.ReadResource(t.Context(), &pluginhost.ReadRequest{URI: "who://ami", Caller: who})
			},
			"read in process": func() (json.RawMessage, error) {
				return pluginhost.Of(p).ReadResource(t.Context(), &pluginhost.ReadRequest{URI: "who://ami", Caller: who})
			},
			"prompt over gRPC": func() (json.RawMessage, error) {
				return c.GetPrompt(t.Context(), &pluginhost.PromptRequest{Name: "whoami", Caller: who})
			},
			"prompt in process": func() (json.RawMessage, error) {
				return pluginhost.Of(p).GetPrompt(t.Context(), &pluginhost.PromptRequest{Name: "whoami", Caller: who})
			},
		} {
			res, err := get()
			quoted, _ := json.Marshal(want)
			if err != nil || !strings.Contains(string(res), string(quoted)) {
				t.Errorf("%s as %s: %s %v", name, want, res, err)
			}
		}
	}
}

// The host's Client turns an error frame with required_capabilities into
// a *CapabilityRequiredError, on CallTool and StartCall alike; capabilities
// that are not a JSON object make an invalid answer.
func TestClientCallsCapabilityRequired(t *testing.T) {
	t.Parallel()
	capsFrame := func(id uint64, caps string) *pluginpb.PluginFrame {
		return &pluginpb.PluginFrame{CallId: id, Msg: &pluginpb.PluginFrame_Error{Error: &pluginpb.CallError{
			Code: uint32(codes.FailedPrecondition), Message: "needs " + caps, RequiredCapabilities: []byte(caps),
		}}}
	}
	c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
		for {
			f, err := s.Recv()
			if err != nil {
				return nil
			}
			if st := f.GetStart(); st != nil {
				if err := s.Send(capsFrame(f.GetCallId(), st.GetTool())); err != nil {
					return err
				}
			}
		}
	}})
	call := func(tool string) []error {
		_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: tool})
		done := make(chan error, 1)
		c.StartCall(t.Context(), &pluginhost.CallRequest{Tool: tool}, func(_ json.RawMessage, err error) { done <- err })
		return []error{err, <-done}
	}
	for _, caps := range []string{`{"sampling":{}}`, ` {"roots":{},"elicitation":{"url":{}}}`} {
		for i, err := range call(caps) {
			var cr *pluginproto.CapabilityRequiredError
			if !errors.As(err, &cr) || string(cr.Capabilities) != caps || cr.Message != "needs "+caps {
				t.Errorf("call %d with %s: err = %#v, want a *pluginproto.CapabilityRequiredError of them", i, caps, err)
			}
		}
	}
	for _, caps := range []string{`["sampling"]`, `"sampling"`, `{"sampling":`, `null`} {
		for i, err := range call(caps) {
			if !errors.Is(err, ErrInvalidResult) {
				t.Errorf("call %d with %s: err = %v, want ErrInvalidResult", i, caps, err)
			}
		}
	}
}

// The SDK answers such a call on CallsV2 with an error frame: code
// FAILED_PRECONDITION, the handler's message and the capabilities.
func TestServerCallsV2CapabilityRequired(t *testing.T) {
	t.Parallel()
	p := pluginproto.New("test", "0")
	p.AddTool(pluginproto.Tool{Name: "t"}, func(ctx context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		return nil, sampleTen(ctx, r)
	})
	c, _ := servePlugin(t, p)
	stream, err := c.rpc.CallsV2(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&pluginpb.HostFrame{CallId: 7, Msg: &pluginpb.HostFrame_Start{Start: &pluginpb.CallStart{Tool: "t", ClientCapabilities: []byte(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	got, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	want := &pluginpb.PluginFrame{CallId: 7, Msg: &pluginpb.PluginFrame_Error{Error: &pluginpb.CallError{
		Code:                 uint32(codes.FailedPrecondition),
		Message:              "sampling/createMessage: the client did not declare the capability sampling",
		RequiredCapabilities: []byte(`{"sampling":{}}`),
	}}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
}

func TestProxyOffers(t *testing.T) {
	t.Parallel()
	for _, o := range []pluginproto.Offers{{}, {Resources: true}, {Resources: true, ResourceSubscriptions: true, Prompts: true, Completions: true}, {Prompts: true}} {
		p := pluginproto.New("proxy", "0")
		// Own resources and prompts would make a plugin offer them; under
		// a proxy, what the proxy declared with Offer is what is offered.
		p.AddResource(pluginproto.Resource{URI: "file:///own", Name: "own"}, func(context.Context, *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) { return nil, nil })
		p.AddPrompt(pluginproto.Prompt{Name: "own"}, func(context.Context, *pluginproto.PromptGet) (*pluginproto.PromptResult, error) { return nil, nil })
		pluginhost.Of(p).SetProxy(&fakeProxy{})
		p.Offer(o)
		if got := p.Offers(); !got.Equal(o) {
			t.Errorf("Offers() = %+v, want %+v", got, o)
		}
		c, _ := servePlugin(t, p)
		d, err := c.Describe(t.Context(), "test")
		if err != nil {
			t.Fatal(err)
		}
		if !d.Offers.Equal(o) {
			t.Errorf("Describe offers %+v, want %+v", d.Offers, o)
		}
	}
}

// Subscriptions through the gRPC server reach the proxy, and the
// plugin's ResourceUpdated then reports the URI to the host's watch.
func TestProxySubscribe(t *testing.T) {
	t.Parallel()
	fp := &fakeProxy{}
	p := pluginproto.New("proxy", "0")
	pluginhost.Of(p).SetProxy(fp)
	p.Offer(pluginproto.Offers{Resources: true, ResourceSubscriptions: true})
	c, _ := servePlugin(t, p)
	if _, err := c.Describe(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	changes := make(chan Change, 8)
	watchDone := make(chan error, 1)
	go func() { watchDone <- c.Watch(ctx, func(ch Change) { changes <- ch }) }()

	if err := c.SubscribeResource(ctx, "file:///r", true); err != nil {
		t.Fatal(err)
	}
	p.ResourceUpdated("file:///other") // not subscribed: not reported
	p.ResourceUpdated("file:///r")
	for got := false; !got; {
		select {
		case ch := <-changes:
			for _, u := range ch.Updated {
				if u == "file:///other" {
					t.Errorf("an update of an unsubscribed resource was reported: %+v", ch)
				}
				got = got || u == "file:///r"
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no update reported for the subscribed resource")
		}
	}
	if err := c.SubscribeResource(ctx, "file:///r", false); err != nil {
		t.Fatal(err)
	}
	fp.mu.Lock()
	fp.subscribe = errors.New("the server has no such resource")
	fp.mu.Unlock()
	if err := c.SubscribeResource(ctx, "file:///gone", true); err == nil || !strings.Contains(err.Error(), "the server has no such resource") {
		t.Errorf("SubscribeResource with a failing proxy = %v, want its error", err)
	}
	fp.mu.Lock()
	fp.subscribe = fmt.Errorf("%w: file:///unknown", pluginproto.ErrUnknownResource)
	fp.mu.Unlock()
	if err := c.SubscribeResource(ctx, "file:///unknown", true); !errors.Is(err, pluginproto.ErrUnknownResource) || !strings.Contains(err.Error(), "file:///unknown") {
		t.Errorf("SubscribeResource of an unknown resource = %v, want pluginproto.ErrUnknownResource naming it", err)
	}
	fp.mu.Lock()
	if diff := cmp.Diff([]string{"+file:///r", "-file:///r", "+file:///gone", "+file:///unknown"}, fp.subs); diff != "" {
		t.Errorf("subscriptions (-want +got):\n%s", diff)
	}
	fp.mu.Unlock()
	cancel()
	<-watchDone
}

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
	_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t", ClientCapabilities: caps})
	var ir *pluginproto.InputRequiredError
	if !errors.As(err, &ir) || string(ir.Requests) != `{"1":{"method":"roots/list"}}` || ir.State != "round 1" {
		t.Fatalf("round 1: err = %v, want the *pluginproto.InputRequiredError", err)
	}
	in := &pluginhost.Input{Responses: json.RawMessage(`{"1":{"roots":[]}}`), State: ir.State}
	done := make(chan error, 1)
	c.StartCall(t.Context(), &pluginhost.CallRequest{Tool: "t", ClientCapabilities: caps, Input: in}, func(res json.RawMessage, err error) {
		if err == nil && string(res) != `{"content":[]}` {
			err = fmt.Errorf("result %s", res)
		}
		done <- err
	})
	if err := <-done; err != nil {
		t.Fatalf("round 2: %v", err)
	}
	c.StartCall(t.Context(), &pluginhost.CallRequest{Tool: "t"}, func(_ json.RawMessage, err error) { done <- err })
	if err := <-done; !errors.As(err, &ir) {
		t.Errorf("StartCall: err = %v, want an *pluginproto.InputRequiredError", err)
	}
	_, err = c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "bad"})
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
	huge := &pluginhost.Input{Responses: fmt.Appendf(nil, `{"1":{"text":%q}}`, strings.Repeat("x", 4<<20))}
	_, err = c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t", Input: huge})
	if err == nil || !strings.HasPrefix(err.Error(), `call "t": the request takes`) {
		t.Errorf("a 4 MiB input: err = %v", err)
	}
	c.StartCall(t.Context(), &pluginhost.CallRequest{Tool: "t", Input: &pluginhost.Input{Responses: json.RawMessage(`1`)}}, func(_ json.RawMessage, err error) { done <- err })
	if err := <-done; err == nil || err.Error() != `call "t": input responses is not a JSON object: "1"` {
		t.Errorf("responses not an object: err = %v", err)
	}
	if n := frames.Load(); n != before {
		t.Errorf("%d frames sent for calls whose input the plugin could not take", n-before)
	}
}

// Over CallsV2, from the SDK's server to the host's Client: the Start
// carries Tasks, the plugin's one Detach reaches Detach before the
// progress sent after it and before the answer, with CallTool and with
// StartCall; without Tasks the plugin does not go on as a task.
func TestCallsV2Detach(t *testing.T) {
	t.Parallel()
	p := pluginproto.New("test", "0")
	p.AddTool(pluginproto.Tool{Name: "job", TaskSupport: pluginproto.TaskOptional}, job)
	c, _ := servePlugin(t, p)
	for _, async := range []bool{false, true} {
		for _, tasks := range []bool{false, true} {
			var events []string
			req := &pluginhost.CallRequest{
				Tool: "job", Tasks: tasks,
				Detach:   func() { events = append(events, "detach") },
				Progress: func(_, _ float64, msg string) { events = append(events, "progress "+msg) },
			}
			var (
				res json.RawMessage
				err error
			)
			if async {
				done := make(chan struct{})
				c.StartCall(t.Context(), req, func(r json.RawMessage, e error) { res, err = r, e; close(done) })
				<-done
			} else {
				res, err = c.CallTool(t.Context(), req)
			}
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, "result "+string(res))
			want := []string{"progress working", fmt.Sprintf(`result {"content":[{"type":"text","text":"task %v %v"}]}`, tasks, tasks)}
			if tasks {
				want = append([]string{"detach"}, want...)
			}
			if diff := cmp.Diff(want, events); diff != "" {
				t.Errorf("StartCall %v, Tasks %v: events (-want +got):\n%s", async, tasks, diff)
			}
		}
	}
}

// The host's side takes a call's first Detach alone, and only when the
// call offered a task: a plugin that sends it again, or for a call whose
// Start did not set tasks, is ignored. The Start carries Tasks as given.
func TestClientDetachOnceAndOnlyWithTasks(t *testing.T) {
	t.Parallel()
	detachFrame := func(id uint64) *pluginpb.PluginFrame {
		return &pluginpb.PluginFrame{CallId: id, Msg: &pluginpb.PluginFrame_Detach{Detach: &pluginpb.Detach{}}}
	}
	c, _ := serve(t, 2, &fake{calls: func(s callsStream) error {
		for {
			f, err := s.Recv()
			if err != nil {
				return nil
			}
			id := f.GetCallId()
			if err := sendAll(s, detachFrame(id), progressFrame(id, "between"), detachFrame(id),
				resultFrame(id, fmt.Sprintf(`{"tasks":%v}`, f.GetStart().GetTasks()))); err != nil {
				return err
			}
		}
	}})
	for _, async := range []bool{false, true} {
		for _, tasks := range []bool{false, true} {
			var events []string
			req := &pluginhost.CallRequest{
				Tool: "job", Tasks: tasks,
				Detach:   func() { events = append(events, "detach") },
				Progress: func(_, _ float64, msg string) { events = append(events, msg) },
			}
			var (
				res json.RawMessage
				err error
			)
			if async {
				done := make(chan struct{})
				c.StartCall(t.Context(), req, func(r json.RawMessage, e error) { res, err = r, e; close(done) })
				<-done
			} else {
				res, err = c.CallTool(t.Context(), req)
			}
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, string(res))
			want := []string{"between", fmt.Sprintf(`{"tasks":%v}`, tasks)}
			if tasks {
				want = append([]string{"detach"}, want...)
			}
			if got := strings.Join(events, "; "); got != strings.Join(want, "; ") {
				t.Errorf("StartCall %v, Tasks %v: got %s, want %s", async, tasks, got, strings.Join(want, "; "))
			}
		}
	}
}

// A call's trace context reaches the handler's Request, over the contract
// (the Client's CallStart to the plugin's server) and in process; a proxy
// gets it in its ProxyCall.
func TestTraceContextReachesTheHandler(t *testing.T) {
	t.Parallel()
	const parent, state = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=1"
	p := pluginproto.New("test", "0")
	p.AddTool(pluginproto.Tool{Name: "trace"}, func(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		return pluginproto.TextResult(req.TraceParent + " " + req.TraceState), nil
	})
	c, _ := servePlugin(t, p)
	want := string(textResult(t, parent+" "+state))
	for name, call := range map[string]func(*pluginhost.CallRequest) (json.RawMessage, error){
		"over gRPC": func(r *pluginhost.CallRequest) (json.RawMessage, error) { return c.CallTool(t.Context(), r) },
		"in process": func(r *pluginhost.CallRequest) (json.RawMessage, error) {
			return pluginhost.Of(p).CallTool(t.Context(), r)
		},
	} {
		res, err := call(&pluginhost.CallRequest{Tool: "trace", TraceParent: parent, TraceState: state})
		if err != nil || string(res) != want {
			t.Errorf("%s: %s %v, want %s", name, res, err, want)
		}
	}

	got := make(chan *pluginhost.ProxyCall, 1)
	px := pluginproto.New("proxy", "0")
	pluginhost.Of(px).SetProxy(recordingProxy{got})

	if _, err := pluginhost.Of(px).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "any", TraceParent: parent, TraceState: state}); err != nil {
		t.Fatal(err)
	}
	if pc := <-got; pc.TraceParent != parent || pc.TraceState != state {
		t.Errorf("the proxy got traceparent %q and tracestate %q", pc.TraceParent, pc.TraceState)
	}
}
