package pluginclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/pluginproto"
)

// surfaceFake is a plugin of contract 2 that offers everything and answers
// the rpcs of resources, prompts and completion as each test asks.
type surfaceFake struct {
	fake
	rpcs      atomic.Int32 // rpcs served other than Describe
	list      func(rpc, cursor string) (*pluginpb.ListResponse, error)
	read      func(*pluginpb.ReadResourceRequest) (*pluginpb.ReadResourceResponse, error)
	get       func(*pluginpb.GetPromptRequest) (*pluginpb.GetPromptResponse, error)
	complete  func(*pluginpb.CompleteRequest) (*pluginpb.CompleteResponse, error)
	subscribe func(*pluginpb.SubscribeResourceRequest) error
}

var offerAll = &pluginpb.Offers{Resources: true, ResourceSubscriptions: true, Prompts: true, Completions: true}

func newSurfaceFake(offers *pluginpb.Offers) *surfaceFake {
	return &surfaceFake{fake: fake{describe: &pluginpb.DescribeResponse{Name: "f", ContractVersion: 2, Offers: offers}}}
}

func (f *surfaceFake) ListResources(_ context.Context, r *pluginpb.ListRequest) (*pluginpb.ListResponse, error) {
	f.rpcs.Add(1)
	return f.list("resources", r.GetCursor())
}

func (f *surfaceFake) ListResourceTemplates(_ context.Context, r *pluginpb.ListRequest) (*pluginpb.ListResponse, error) {
	f.rpcs.Add(1)
	return f.list("templates", r.GetCursor())
}

func (f *surfaceFake) ListPrompts(_ context.Context, r *pluginpb.ListRequest) (*pluginpb.ListResponse, error) {
	f.rpcs.Add(1)
	return f.list("prompts", r.GetCursor())
}

func (f *surfaceFake) ReadResource(_ context.Context, r *pluginpb.ReadResourceRequest) (*pluginpb.ReadResourceResponse, error) {
	f.rpcs.Add(1)
	return f.read(r)
}

func (f *surfaceFake) GetPrompt(_ context.Context, r *pluginpb.GetPromptRequest) (*pluginpb.GetPromptResponse, error) {
	f.rpcs.Add(1)
	return f.get(r)
}

func (f *surfaceFake) Complete(_ context.Context, r *pluginpb.CompleteRequest) (*pluginpb.CompleteResponse, error) {
	f.rpcs.Add(1)
	return f.complete(r)
}

func (f *surfaceFake) SubscribeResource(_ context.Context, r *pluginpb.SubscribeResourceRequest) (*pluginpb.SubscribeResourceResponse, error) {
	f.rpcs.Add(1)
	return &pluginpb.SubscribeResourceResponse{}, f.subscribe(r)
}

// describedClient serves f and calls Describe, so that the Client knows
// what f offers.
func describedClient(t *testing.T, f pluginpb.PluginServer) *Client {
	t.Helper()
	c, _ := serve(t, 2, f)
	if _, err := c.Describe(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientCallsNothingNotOffered(t *testing.T) {
	t.Parallel()
	for name, describe := range map[string]bool{"before Describe": false, "offers unset": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newSurfaceFake(nil)
			c, _ := serve(t, 2, f)
			if describe {
				d, err := c.Describe(t.Context(), "test")
				if err != nil || !d.Offers.Equal(pluginproto.Offers{}) {
					t.Fatalf("Describe = %+v, %v; want no offers", d, err)
				}
			}
			ctx := t.Context()
			errs := map[string]error{}
			_, errs["list resources"] = c.ListResources(ctx)
			_, errs["list resource templates"] = c.ListResourceTemplates(ctx)
			_, errs["list prompts"] = c.ListPrompts(ctx)
			_, errs[`read resource "x://a"`] = c.ReadResource(ctx, &pluginhost.ReadRequest{URI: "x://a"})
			_, errs[`get prompt "p"`] = c.GetPrompt(ctx, &pluginhost.PromptRequest{Name: "p"})
			_, errs["complete"] = c.Complete(ctx, json.RawMessage(`{}`))
			errs[`subscribe to resource "x://a"`] = c.SubscribeResource(ctx, "x://a", true)
			for what, err := range errs {
				if !errors.Is(err, ErrNotOffered) || !strings.HasPrefix(err.Error(), what+": not offered by the plugin: the plugin did not offer ") {
					t.Errorf("%s: err = %v, want ErrNotOffered", what, err)
				}
			}
			if n := f.rpcs.Load(); n != 0 {
				t.Errorf("%d rpcs made for things not offered", n)
			}
		})
	}
}

// pages is a list of pages by cursor: each page's items, and its next
// cursor.
type pages map[string]struct {
	items []string
	next  string
}

func (p pages) list(_, cursor string) (*pluginpb.ListResponse, error) {
	page, ok := p[cursor]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "unknown cursor %q", cursor)
	}
	resp := &pluginpb.ListResponse{NextCursor: page.next}
	for _, it := range page.items {
		resp.Items = append(resp.Items, []byte(it))
	}
	return resp, nil
}

func many(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"n":%d}`, i)
	}
	return out
}

func TestClientListsFetchEveryPageWithinBounds(t *testing.T) {
	t.Parallel()
	endless := func(_, cursor string) (*pluginpb.ListResponse, error) {
		return &pluginpb.ListResponse{Items: [][]byte{[]byte(`{}`)}, NextCursor: cursor + "x"}, nil
	}
	tests := map[string]struct {
		list func(rpc, cursor string) (*pluginpb.ListResponse, error)
		want []string
		err  string // the error's text after "list resources: "
	}{
		"one page": {list: pages{"": {items: []string{`{"a":1}`}}}.list, want: []string{`{"a":1}`}},
		"no items": {list: pages{"": {}}.list, want: []string{}},
		"three pages": {
			list: pages{"": {[]string{`{"a":1}`}, "c1"}, "c1": {[]string{`{"b":2}`, `{"c":3}`}, "c2"}, "c2": {[]string{` {"d":4}`}, ""}}.list,
			want: []string{`{"a":1}`, `{"b":2}`, `{"c":3}`, ` {"d":4}`},
		},
		"10000 items": {list: pages{"": {many(5000), "c1"}, "c1": {many(5000), ""}}.list, want: append(many(5000), many(5000)...)},
		"repeated cursor": {
			list: pages{"": {nil, "c1"}, "c1": {nil, "c2"}, "c2": {nil, "c1"}}.list,
			err:  `plugin sent an invalid result: page 3 repeats the cursor "c1" of an earlier page`,
		},
		"too many pages": {list: endless, err: "plugin sent an invalid result: more than 1000 pages"},
		"too many items": {list: pages{"": {many(6000), "c1"}, "c1": {many(4001), ""}}.list, err: "over the host's limit: 10001 items, 97790 bytes by page 2, over MaxItems (10000) or MaxListSize (16777216 bytes)"},
		"an item not an object": {
			list: pages{"": {[]string{`{}`}, "c1"}, "c1": {[]string{`{}`, `[1]`}, ""}}.list,
			err:  `plugin sent an invalid result: item 1 of page 2 is not a JSON object: "[1]"`,
		},
		"an item not JSON": {list: pages{"": {[]string{`{`}, ""}}.list, err: `plugin sent an invalid result: item 0 of page 1 is not a JSON object: "{"`},
		"the plugin fails": {list: pages{}.list, err: `rpc error: code = InvalidArgument desc = unknown cursor ""`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newSurfaceFake(offerAll)
			f.list = tc.list
			c := describedClient(t, f)
			items, err := c.ListResources(t.Context())
			if tc.err != "" {
				if err == nil || err.Error() != "list resources: "+tc.err {
					t.Errorf("err = %v, want list resources: %s", err, tc.err)
				}
				if strings.HasPrefix(tc.err, "plugin sent an invalid result") && !errors.Is(err, ErrInvalidResult) {
					t.Errorf("err = %v, want ErrInvalidResult", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, jsonStrings(items)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
}

// Each list asks its own rpc.
func TestClientListsAskTheirRPC(t *testing.T) {
	t.Parallel()
	f := newSurfaceFake(offerAll)
	f.list = func(rpc, _ string) (*pluginpb.ListResponse, error) {
		return &pluginpb.ListResponse{Items: [][]byte{fmt.Appendf(nil, `{"rpc":%q}`, rpc)}}, nil
	}
	c := describedClient(t, f)
	for rpc, list := range map[string]func(context.Context) ([]json.RawMessage, error){
		"resources": c.ListResources, "templates": c.ListResourceTemplates, "prompts": c.ListPrompts,
	} {
		items, err := list(t.Context())
		if want := fmt.Sprintf(`{"rpc":%q}`, rpc); err != nil || len(items) != 1 || string(items[0]) != want {
			t.Errorf("%s: %s, %v; want %s", rpc, items, err, want)
		}
	}
}

func TestInputRequiredIsChecked(t *testing.T) {
	t.Parallel()
	req := func(key, body string) string { return fmt.Sprintf(`{%q:%s}`, key, body) }
	elicit := `{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}`
	sixteen := "{"
	for i := range 16 {
		if i > 0 {
			sixteen += ","
		}
		sixteen += fmt.Sprintf(`"%d":{"method":"roots/list"}`, i)
	}
	sixteen += "}"
	tests := map[string]struct {
		requests, state string
		err             string // "" for valid
	}{
		"one request":             {requests: req("1", elicit)},
		"roots without params":    {requests: req("1", `{"method":"roots/list"}`)},
		"roots with params":       {requests: req("1", `{"method":"roots/list","params":{}}`)},
		"sixteen requests":        {requests: sixteen},
		"every method":            {requests: `{"a":{"method":"sampling/createMessage","params":{}},"b":` + elicit + `,"c":{"method":"roots/list"}}`, state: strings.Repeat("s", 64<<10)},
		"not an object":           {requests: `[]`, err: `requests is not a JSON object: "[]"`},
		"not JSON":                {requests: `{"1":`, err: `requests is not a JSON object: "{\"1\":"`},
		"absent":                  {requests: ``, err: `requests is not a JSON object: ""`},
		"empty":                   {requests: `{}`, err: "requests is empty"},
		"seventeen requests":      {requests: strings.TrimSuffix(sixteen, "}") + `,"16":{"method":"roots/list"}}`, err: "more than 16 requests"},
		"a key twice":             {requests: `{"1":{"method":"roots/list"},"1":{"method":"roots/list"}}`, err: `request "1" appears twice`},
		"an empty key":            {requests: req("", `{"method":"roots/list"}`), err: "requests has an empty key"},
		"a request not an object": {requests: req("1", `"roots/list"`), err: `request "1": not a JSON object: "roots/list"`},
		"no method":               {requests: req("1", `{"params":{}}`), err: `request "1": method is not a string: `},
		"a method not a string":   {requests: req("1", `{"method":1}`), err: `request "1": method is not a string: 1`},
		"another method":          {requests: req("1", `{"method":"tools/call","params":{}}`), err: `request "1": method "tools/call" is none of sampling/createMessage, elicitation/create and roots/list`},
		"sampling without params": {requests: req("1", `{"method":"sampling/createMessage"}`), err: `request "1": sampling/createMessage has no params`},
		"params not an object":    {requests: req("1", `{"method":"elicitation/create","params":[]}`), err: `request "1": elicitation/create params is not a JSON object: []`},
		"roots with null params":  {requests: req("1", `{"method":"roots/list","params":null}`), err: `request "1": roots/list params is not a JSON object: null`},
		"state too large":         {requests: req("1", elicit), state: strings.Repeat("s", 64<<10+1), err: "request_state of 65537 bytes, over the 65536 allowed"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := inputRequired("call \"t\"", &pluginpb.InputRequired{Requests: []byte(tc.requests), RequestState: tc.state})
			var ir *pluginproto.InputRequiredError
			if tc.err == "" {
				if !errors.As(err, &ir) || string(ir.Requests) != tc.requests || ir.State != tc.state {
					t.Errorf("err = %v, want the *pluginproto.InputRequiredError", err)
				}
				return
			}
			want := `call "t": plugin sent an invalid result: input_required: ` + tc.err
			if !errors.Is(err, ErrInvalidResult) || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("err = %v\nwant ErrInvalidResult: %s", err, want)
			}
		})
	}
}

func TestClientReadAndGetAnswers(t *testing.T) {
	t.Parallel()
	valid := &pluginpb.InputRequired{Requests: []byte(`{"1":{"method":"roots/list"}}`), RequestState: "s"}
	type answer struct {
		result []byte
		ir     *pluginpb.InputRequired
		err    error
	}
	tests := map[string]struct {
		answer          answer
		wantRead        string // the result, or the error's text after the request's name
		wantGet         string
		isRead, isGet   error
		inputRequiredOK bool
	}{
		"a result":               {answer: answer{result: []byte(`{"contents":[]}`)}, wantRead: `{"contents":[]}`, wantGet: `{"contents":[]}`},
		"a result not an object": {answer: answer{result: []byte(`"x"`)}, wantRead: `: plugin sent an invalid result: not a JSON object: "\"x\""`, isRead: ErrInvalidResult, isGet: ErrInvalidResult},
		"no answer":              {answer: answer{}, wantRead: ": plugin ended the call without a result", isRead: ErrNoResult, isGet: ErrNoResult},
		"input required":         {answer: answer{ir: valid}, inputRequiredOK: true},
		"input required, bad":    {answer: answer{ir: &pluginpb.InputRequired{Requests: []byte(`{}`)}}, wantRead: ": plugin sent an invalid result: input_required: requests is empty", isRead: ErrInvalidResult, isGet: ErrInvalidResult},
		"not found": {
			answer: answer{err: status.Error(codes.NotFound, "nothing there")}, wantRead: ": unknown resource: nothing there", wantGet: ": unknown prompt: nothing there",
			isRead: pluginproto.ErrUnknownResource, isGet: pluginproto.ErrUnknownPrompt,
		},
		"invalid arguments": {answer: answer{err: status.Error(codes.InvalidArgument, `missing required argument "a"`)}, wantRead: `: invalid arguments: missing required argument "a"`, isRead: pluginproto.ErrInvalidArguments, isGet: pluginproto.ErrInvalidArguments},
		"the plugin fails":  {answer: answer{err: status.Error(codes.Internal, "oops")}, wantRead: ": the plugin failed (Internal): oops"},
		"the plugin closes": {answer: answer{err: status.Error(codes.Unavailable, "gone")}, wantRead: ": the plugin closed the call (it died or dropped the connection): rpc error: code = Unavailable desc = gone", isRead: ErrPluginClosed, isGet: ErrPluginClosed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newSurfaceFake(offerAll)
			f.read = func(*pluginpb.ReadResourceRequest) (*pluginpb.ReadResourceResponse, error) {
				r := &pluginpb.ReadResourceResponse{}
				if tc.answer.result != nil {
					r.Answer = &pluginpb.ReadResourceResponse_Result{Result: tc.answer.result}
				}
				if tc.answer.ir != nil {
					r.Answer = &pluginpb.ReadResourceResponse_InputRequired{InputRequired: tc.answer.ir}
				}
				return r, tc.answer.err
			}
			f.get = func(*pluginpb.GetPromptRequest) (*pluginpb.GetPromptResponse, error) {
				r := &pluginpb.GetPromptResponse{}
				if tc.answer.result != nil {
					r.Answer = &pluginpb.GetPromptResponse_Result{Result: tc.answer.result}
				}
				if tc.answer.ir != nil {
					r.Answer = &pluginpb.GetPromptResponse_InputRequired{InputRequired: tc.answer.ir}
				}
				return r, tc.answer.err
			}
			c := describedClient(t, f)
			check := func(what string, res json.RawMessage, err error, want string, is error) {
				t.Helper()
				if tc.inputRequiredOK {
					var ir *pluginproto.InputRequiredError
					if !errors.As(err, &ir) || string(ir.Requests) != string(valid.Requests) || ir.State != "s" {
						t.Errorf("%s: err = %v, want the *pluginproto.InputRequiredError", what, err)
					}
					return
				}
				got := string(res)
				if err != nil {
					got = strings.TrimPrefix(err.Error(), what)
				}
				if got != want || (is != nil && !errors.Is(err, is)) {
					t.Errorf("%s = %s\nwant %s (errors.Is %v)", what, got, want, is)
				}
			}
			res, err := c.ReadResource(t.Context(), &pluginhost.ReadRequest{URI: "x://a"})
			check(`read resource "x://a"`, res, err, tc.wantRead, tc.isRead)
			res, err = c.GetPrompt(t.Context(), &pluginhost.PromptRequest{Name: "p"})
			wantGet := tc.wantGet
			if wantGet == "" {
				wantGet = tc.wantRead
			}
			check(`get prompt "p"`, res, err, wantGet, tc.isGet)
		})
	}
}

// What the host sends: the client's capabilities ({} when none), the
// retry's input, {} for absent prompt arguments; nothing when the input
// would not fit in a message the plugin accepts.
func TestClientSendsCapabilitiesAndInput(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var reads []*pluginpb.ReadResourceRequest
	var gets []*pluginpb.GetPromptRequest
	f := newSurfaceFake(offerAll)
	f.read = func(r *pluginpb.ReadResourceRequest) (*pluginpb.ReadResourceResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		reads = append(reads, r)
		return &pluginpb.ReadResourceResponse{Answer: &pluginpb.ReadResourceResponse_Result{Result: []byte(`{}`)}}, nil
	}
	f.get = func(r *pluginpb.GetPromptRequest) (*pluginpb.GetPromptResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		gets = append(gets, r)
		return &pluginpb.GetPromptResponse{Answer: &pluginpb.GetPromptResponse_Result{Result: []byte(`{}`)}}, nil
	}
	c := describedClient(t, f)
	in := &pluginhost.Input{Responses: json.RawMessage(`{"1":{"roots":[]}}`), Errors: map[string]pluginproto.InputError{"2": {Code: -32601, Message: "no sampling"}}, State: "st"}
	wantIn := &pluginpb.Input{Responses: []byte(`{"1":{"roots":[]}}`), Errors: map[string]*pluginpb.InputError{"2": {Code: -32601, Message: "no sampling"}}, RequestState: "st"}
	ctx := t.Context()
	for _, r := range []*pluginhost.ReadRequest{{URI: "x://a"}, {URI: "x://b", ClientCapabilities: json.RawMessage(`{"roots":{}}`), Input: in}} {
		if _, err := c.ReadResource(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []*pluginhost.PromptRequest{{Name: "a"}, {Name: "b", Arguments: json.RawMessage(`{"x":"y"}`), ClientCapabilities: json.RawMessage(`{"roots":{}}`), Input: in}} {
		if _, err := c.GetPrompt(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	wantReads := []*pluginpb.ReadResourceRequest{
		{Uri: "x://a", ClientCapabilities: []byte(`{}`)},
		{Uri: "x://b", ClientCapabilities: []byte(`{"roots":{}}`), Input: wantIn},
	}
	if diff := cmp.Diff(wantReads, reads, protocmp.Transform()); diff != "" {
		t.Errorf("reads (-want +got):\n%s", diff)
	}
	wantGets := []*pluginpb.GetPromptRequest{
		{Name: "a", Arguments: []byte(`{}`), ClientCapabilities: []byte(`{}`)},
		{Name: "b", Arguments: []byte(`{"x":"y"}`), ClientCapabilities: []byte(`{"roots":{}}`), Input: wantIn},
	}
	if diff := cmp.Diff(wantGets, gets, protocmp.Transform()); diff != "" {
		t.Errorf("gets (-want +got):\n%s", diff)
	}

	before := f.rpcs.Load()
	huge := &pluginhost.Input{Responses: fmt.Appendf(nil, `{"1":{"text":%q}}`, strings.Repeat("x", 4<<20))}
	if _, err := c.ReadResource(ctx, &pluginhost.ReadRequest{URI: "x://a", Input: huge}); err == nil || !strings.Contains(err.Error(), "over the 4194304 a plugin accepts") {
		t.Errorf("read with a 4 MiB input: err = %v", err)
	}
	if _, err := c.GetPrompt(ctx, &pluginhost.PromptRequest{Name: "a", Input: &pluginhost.Input{Responses: json.RawMessage(`[]`)}}); err == nil || !strings.Contains(err.Error(), "input responses is not a JSON object") {
		t.Errorf("get with responses not an object: err = %v", err)
	}
	if n := f.rpcs.Load(); n != before {
		t.Errorf("%d rpcs made with input the plugin could not take", n-before)
	}
}

func TestClientCompleteAndSubscribe(t *testing.T) {
	t.Parallel()
	f := newSurfaceFake(offerAll)
	f.complete = func(r *pluginpb.CompleteRequest) (*pluginpb.CompleteResponse, error) {
		switch string(r.GetParams()) {
		case `"unknown"`:
			return nil, status.Error(codes.NotFound, `no prompt "x"`)
		case `"bad"`:
			return &pluginpb.CompleteResponse{Result: []byte(`[]`)}, nil
		}
		return &pluginpb.CompleteResponse{Result: r.GetParams()}, nil
	}
	var subs []string
	f.subscribe = func(r *pluginpb.SubscribeResourceRequest) error {
		if r.GetUri() == "x://none" {
			return status.Error(codes.NotFound, `no resource "x://none"`)
		}
		subs = append(subs, fmt.Sprint(r.GetUri(), " unsubscribe=", r.GetUnsubscribe()))
		return nil
	}
	c := describedClient(t, f)
	if res, err := c.Complete(t.Context(), json.RawMessage(`{"completion":{"values":[]}}`)); err != nil || string(res) != `{"completion":{"values":[]}}` {
		t.Errorf("Complete = %s, %v", res, err)
	}
	if _, err := c.Complete(t.Context(), json.RawMessage(`"unknown"`)); !errors.Is(err, ErrUnknownReference) || err.Error() != `complete: unknown prompt or resource template: no prompt "x"` {
		t.Errorf("Complete of an unknown ref: %v", err)
	}
	if _, err := c.Complete(t.Context(), json.RawMessage(`"bad"`)); !errors.Is(err, ErrInvalidResult) {
		t.Errorf("Complete with a result not an object: %v, want ErrInvalidResult", err)
	}
	if err := c.SubscribeResource(t.Context(), "x://a", true); err != nil {
		t.Fatal(err)
	}
	if err := c.SubscribeResource(t.Context(), "x://a", false); err != nil {
		t.Fatal(err)
	}
	err := c.SubscribeResource(t.Context(), "x://none", true)
	if want := `subscribe to resource "x://none": unknown resource: no resource "x://none"`; !errors.Is(err, pluginproto.ErrUnknownResource) || err.Error() != want {
		t.Errorf("SubscribeResource to an unknown resource = %v, want %s", err, want)
	}
	if diff := cmp.Diff([]string{"x://a unsubscribe=false", "x://a unsubscribe=true"}, subs); diff != "" {
		t.Errorf("subscriptions (-want +got):\n%s", diff)
	}
}

// Watch turns the plugin's messages into Changes, keeping only what the
// plugin offered; an empty message means the tools changed.
func TestClientWatchChanges(t *testing.T) {
	t.Parallel()
	msgs := []*pluginpb.ToolsChanged{
		{},
		{Resources: true, Updated: []string{"x://a", ""}},
		{Prompts: true},                  // prompts not offered: dropped
		{Updated: []string{"x://b"}},     // kept
		{Tools: true, Prompts: true},     // tools kept
		{Resources: true, Prompts: true}, // resources kept
	}
	f := newSurfaceFake(&pluginpb.Offers{Resources: true, ResourceSubscriptions: true})
	f.watch = func(s grpc.ServerStreamingServer[pluginpb.ToolsChanged]) error {
		for _, m := range msgs {
			if err := s.Send(m); err != nil {
				return err
			}
		}
		return nil
	}
	c := describedClient(t, f)
	var got []Change
	err := c.Watch(t.Context(), func(ch Change) { got = append(got, ch) })
	if !errors.Is(err, ErrPluginClosed) {
		t.Errorf("Watch = %v, want ErrPluginClosed once the plugin ended it", err)
	}
	want := []Change{{Tools: true}, {Resources: true, Updated: []string{"x://a"}}, {Updated: []string{"x://b"}}, {Tools: true}, {Resources: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}
