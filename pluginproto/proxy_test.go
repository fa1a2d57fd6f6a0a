package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/plughost/plughost/internal/pluginhost"
)

// fakeProxy records what it is handed and answers as its fields say.
type fakeProxy struct {
	mu    sync.Mutex
	calls []pluginhost.ProxyCall
	reads []string
	subs  []string // "+uri" or "-uri"

	call      func(ctx context.Context, c *pluginhost.ProxyCall) (json.RawMessage, error)
	read      func(uri string, caps json.RawMessage, in *pluginhost.Input) (json.RawMessage, error)
	prompt    func(name string, args, caps json.RawMessage, in *pluginhost.Input) (json.RawMessage, error)
	complete  func(params json.RawMessage) (json.RawMessage, error)
	subscribe error
}

func (f *fakeProxy) CallTool(ctx context.Context, c *pluginhost.ProxyCall) (json.RawMessage, error) {
	f.mu.Lock()
	f.calls = append(f.calls, *c)
	f.mu.Unlock()
	return f.call(ctx, c)
}

func (f *fakeProxy) ReadResource(_ context.Context, uri string, caps json.RawMessage, in *pluginhost.Input) (json.RawMessage, error) {
	f.mu.Lock()
	f.reads = append(f.reads, uri)
	f.mu.Unlock()
	return f.read(uri, caps, in)
}

func (f *fakeProxy) GetPrompt(_ context.Context, name string, args, caps json.RawMessage, in *pluginhost.Input) (json.RawMessage, error) {
	return f.prompt(name, args, caps, in)
}

func (f *fakeProxy) Complete(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
	return f.complete(params)
}

func (f *fakeProxy) SubscribeResource(_ context.Context, uri string, subscribe bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if subscribe {
		f.subs = append(f.subs, "+"+uri)
	} else {
		f.subs = append(f.subs, "-"+uri)
	}
	return f.subscribe
}

func raws(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func strs(rs []json.RawMessage) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// gens returns the plugin's change generations of tools, resources and
// prompts: what its watches compare with what the host listed.
func gens(p *Plugin) [3]uint64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return [3]uint64{p.gen[kindTools], p.gen[kindResources], p.gen[kindPrompts]}
}

func TestProxyLists(t *testing.T) {
	t.Parallel()
	p := New("proxy", "0")
	p.AddTool(Tool{Name: "own"}, nopHandler) // not served under a proxy
	pluginhost.Of(p).SetProxy(&fakeProxy{})
	p.Offer(Offers{Resources: true, Prompts: true})

	l := pluginhost.ProxyLists{
		Tools:     raws(`{"name":"a","inputSchema":{"type":"object","x-kept":1}}`, `{"name":"b"}`),
		Resources: raws(`{"uri":"file:///r","name":"r"}`),
		Templates: raws(`{"uriTemplate":"file:///t/{x}","name":"t"}`),
		Prompts:   raws(`{"name":"p","arguments":[{"name":"q"}]}`),
	}
	if err := pluginhost.Of(p).SetProxyLists(l); err != nil {
		t.Fatal(err)
	}
	check := func(what string, got []json.RawMessage, want [][]byte) {
		t.Helper()
		if diff := cmp.Diff(strs(jsonOf(want, func(b []byte) json.RawMessage { return b })), strs(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	check("Tools", p.Tools(), l.Tools)
	check("Resources", p.Resources(), l.Resources)
	check("ResourceTemplates", p.ResourceTemplates(), l.Templates)
	check("Prompts", p.Prompts(), l.Prompts)

	// Unchanged lists bump nothing; each changed one bumps its own.
	g0 := gens(p)
	same := pluginhost.ProxyLists{Tools: raws(`{"name":"a","inputSchema":{"type":"object","x-kept":1}}`, `{"name":"b"}`), Resources: l.Resources, Templates: l.Templates, Prompts: l.Prompts}
	if err := pluginhost.Of(p).SetProxyLists(same); err != nil {
		t.Fatal(err)
	}
	if g := gens(p); g != g0 {
		t.Fatalf("the same lists again: generations %v -> %v, want unchanged", g0, g)
	}
	steps := []struct {
		name string
		edit func(*pluginhost.ProxyLists)
		bump [3]uint64
	}{
		{"a tool's definition", func(l *pluginhost.ProxyLists) { l.Tools = raws(`{"name":"a"}`, `{"name":"b"}`) }, [3]uint64{1, 0, 0}},
		{"tools reordered", func(l *pluginhost.ProxyLists) { l.Tools = raws(`{"name":"b"}`, `{"name":"a"}`) }, [3]uint64{1, 0, 0}},
		{"a resource added", func(l *pluginhost.ProxyLists) {
			l.Resources = raws(`{"uri":"file:///r","name":"r"}`, `{"uri":"file:///s"}`)
		}, [3]uint64{0, 1, 0}},
		{"templates emptied", func(l *pluginhost.ProxyLists) { l.Templates = nil }, [3]uint64{0, 1, 0}},
		{"a prompt removed", func(l *pluginhost.ProxyLists) { l.Prompts = nil }, [3]uint64{0, 0, 1}},
		{"all at once", func(l *pluginhost.ProxyLists) { *l = pluginhost.ProxyLists{} }, [3]uint64{1, 1, 0}},
		{"nothing", func(*pluginhost.ProxyLists) {}, [3]uint64{0, 0, 0}},
	}
	cur := same
	for _, s := range steps {
		before := gens(p)
		s.edit(&cur)
		if err := pluginhost.Of(p).SetProxyLists(cur); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		after := gens(p)
		for i := range after {
			if after[i]-before[i] != s.bump[i] {
				t.Errorf("%s: generations %v -> %v, want bumped by %v", s.name, before, after, s.bump)
				break
			}
		}
	}
}

func TestProxyListsSkipsBadDefinitions(t *testing.T) {
	t.Parallel()
	p := New("proxy", "0")
	pluginhost.Of(p).SetProxy(&fakeProxy{})
	p.Offer(Offers{Resources: true, Prompts: true})
	err := pluginhost.Of(p).SetProxyLists(pluginhost.ProxyLists{
		Tools:     raws(`{"name":"a"}`, `{"description":"nameless"}`, `{"name":"a","description":"again"}`, `{"name":""}`, `[1]`, `{"name":"b"}`),
		Resources: raws(`{"name":"no uri"}`, `{"uri":"file:///r"}`),
		Templates: raws(`{"uri":"file:///x"}`, `{"uriTemplate":"file:///t/{x}"}`, `{"uriTemplate":"file:///t/{x}"}`),
		Prompts:   raws(`{"name":42}`, `{"name":"p"}`),
	})
	if err == nil {
		t.Fatal("SetProxyLists: no error for bad definitions")
	}
	for _, want := range []string{
		`a tool without a "name": {"description":"nameless"}`,
		`tool "a" listed twice: the first is kept`,
		`a tool without a "name": {"name":""}`,
		`a tool without a "name": [1]`,
		`a resource without a "uri": {"name":"no uri"}`,
		`a resource template without a "uriTemplate": {"uri":"file:///x"}`,
		`resource template "file:///t/{x}" listed twice`,
		`a prompt without a "name": {"name":42}`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if got, want := strs(p.Tools()), []string{`{"name":"a"}`, `{"name":"b"}`}; !cmp.Equal(got, want) {
		t.Errorf("Tools = %q, want %q", got, want)
	}
	if got, want := strs(p.Resources()), []string{`{"uri":"file:///r"}`}; !cmp.Equal(got, want) {
		t.Errorf("Resources = %q, want %q", got, want)
	}
	if got, want := strs(p.ResourceTemplates()), []string{`{"uriTemplate":"file:///t/{x}"}`}; !cmp.Equal(got, want) {
		t.Errorf("ResourceTemplates = %q, want %q", got, want)
	}
	if got, want := strs(p.Prompts()), []string{`{"name":"p"}`}; !cmp.Equal(got, want) {
		t.Errorf("Prompts = %q, want %q", got, want)
	}
}

const proxyElicit = `{"1":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}}`

func TestProxyCallTool(t *testing.T) {
	t.Parallel()
	fp := &fakeProxy{}
	p := New("proxy", "0")
	pluginhost.Of(p).SetProxy(fp)
	p.Offer(Offers{})
	fp.call = func(ctx context.Context, c *pluginhost.ProxyCall) (json.RawMessage, error) {
		switch c.Tool {
		case "echo":
			if c.Progress != nil {
				c.Progress(1, 2, "half")
			}
			c.Log("info", json.RawMessage(`"hello"`))
			return json.RawMessage(`{"content":[{"type":"text","text":"echoed"}],"structuredContent":{"verbatim":true}}`), nil
		case "fail":
			return nil, errors.New("the server went away")
		case "ask":
			if c.Input == nil {
				return nil, &InputRequiredError{Requests: json.RawMessage(proxyElicit), State: "xchg-1"}
			}
			return json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, c.Input.State+" "+string(c.Input.Responses))), nil
		}
		return nil, fmt.Errorf("no tool %q", c.Tool)
	}

	t.Run("passes the call", func(t *testing.T) {
		var progress []string
		var logs []string
		caps := json.RawMessage(`{"elicitation":{}}`)
		res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{
			Tool: "echo", Arguments: json.RawMessage(`{"x":[1,2]}`), ClientCapabilities: caps,
			Progress: func(p, total float64, msg string) { progress = append(progress, fmt.Sprintln(p, total, msg)) },
			Log:      func(level, logger string, data json.RawMessage) { logs = append(logs, level+" "+string(data)) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"content":[{"type":"text","text":"echoed"}],"structuredContent":{"verbatim":true}}`; string(res) != want {
			t.Errorf("result %s, want the proxy's as it is: %s", res, want)
		}
		fp.mu.Lock()
		got := fp.calls[len(fp.calls)-1]
		fp.mu.Unlock()
		if got.Tool != "echo" || string(got.Arguments) != `{"x":[1,2]}` || string(got.ClientCapabilities) != string(caps) || got.Input != nil {
			t.Errorf("proxy got %+v", got)
		}
		if diff := cmp.Diff([]string{"1 2 half\n"}, progress); diff != "" {
			t.Errorf("progress (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{`info "hello"`}, logs); diff != "" {
			t.Errorf("logs (-want +got):\n%s", diff)
		}
	})

	t.Run("no progress asked", func(t *testing.T) {
		if _, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "echo"}); err != nil {
			t.Fatal(err)
		}
		fp.mu.Lock()
		got := fp.calls[len(fp.calls)-1]
		fp.mu.Unlock()
		if got.Progress != nil {
			t.Error("ProxyCall.Progress set for a call without progress")
		}
	})

	t.Run("error is an isError result", func(t *testing.T) {
		res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "fail"})
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			IsError bool `json:"isError"`
			Content []struct{ Text string }
		}
		if err := json.Unmarshal(res, &r); err != nil {
			t.Fatal(err)
		}
		if !r.IsError || len(r.Content) != 1 || r.Content[0].Text != "the server went away" {
			t.Errorf("result %s, want an isError result with the proxy's error", res)
		}
	})

	t.Run("input required passes through", func(t *testing.T) {
		_, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "ask", ClientCapabilities: json.RawMessage(`{"elicitation":{}}`)})
		var ir *InputRequiredError
		if !errors.As(err, &ir) {
			t.Fatalf("err = %v, want an *InputRequiredError", err)
		}
		if string(ir.Requests) != proxyElicit || ir.State != "xchg-1" {
			t.Errorf("InputRequiredError %s %q, want the proxy's", ir.Requests, ir.State)
		}
	})

	t.Run("the retry carries the answers and the state", func(t *testing.T) {
		res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "ask", ClientCapabilities: json.RawMessage(`{"elicitation":{}}`),
			AnswerInput: func(method string, params json.RawMessage) (json.RawMessage, error) {
				if method != "elicitation/create" {
					t.Errorf("asked %s", method)
				}
				return json.RawMessage(`{"action":"decline"}`), nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		if want := `xchg-1 {\"1\":{\"action\":\"decline\"}}`; !strings.Contains(string(res), want) {
			t.Errorf("result %s, want it to hold %s", res, want)
		}
	})
}

func TestProxyReadPromptComplete(t *testing.T) {
	t.Parallel()
	fp := &fakeProxy{
		read: func(uri string, caps json.RawMessage, in *pluginhost.Input) (json.RawMessage, error) {
			switch uri {
			case "file:///r":
				return json.RawMessage(`{"contents":[{"uri":"file:///r","text":"R"}]}`), nil
			case "file:///broken":
				return nil, errors.New("disk on fire")
			}
			return nil, fmt.Errorf("%w: %s", ErrUnknownResource, uri)
		},
		prompt: func(name string, args, caps json.RawMessage, in *pluginhost.Input) (json.RawMessage, error) {
			if name != "p" {
				return nil, fmt.Errorf("%w: %s", ErrUnknownPrompt, name)
			}
			return json.RawMessage(fmt.Sprintf(`{"messages":[{"role":"user","content":{"type":"text","text":%q}}]}`, args)), nil
		},
		complete: func(params json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(fmt.Sprintf(`{"completion":{"values":[%q]}}`, params)), nil
		},
	}
	p := New("proxy", "0")
	pluginhost.Of(p).SetProxy(fp)
	p.Offer(Offers{Resources: true, Prompts: true, Completions: true})
	ctx := t.Context()

	if res, err := pluginhost.Of(p).ReadResource(ctx, &pluginhost.ReadRequest{URI: "file:///r"}); err != nil || string(res) != `{"contents":[{"uri":"file:///r","text":"R"}]}` {
		t.Errorf("ReadResource(file:///r) = %s, %v", res, err)
	}
	// Not listed by SetProxyLists: still the proxy's to answer.
	if _, err := pluginhost.Of(p).ReadResource(ctx, &pluginhost.ReadRequest{URI: "file:///nope"}); !errors.Is(err, ErrUnknownResource) || !strings.Contains(err.Error(), "file:///nope") {
		t.Errorf("ReadResource(unknown) = %v, want ErrUnknownResource naming it", err)
	}
	if _, err := pluginhost.Of(p).ReadResource(ctx, &pluginhost.ReadRequest{URI: "file:///broken"}); err == nil || errors.Is(err, ErrUnknownResource) || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("ReadResource(broken) = %v, want the proxy's error", err)
	}
	if res, err := pluginhost.Of(p).GetPrompt(ctx, &pluginhost.PromptRequest{Name: "p", Arguments: json.RawMessage(`{"q":"v"}`)}); err != nil || !strings.Contains(string(res), `{\"q\":\"v\"}`) {
		t.Errorf("GetPrompt(p) = %s, %v", res, err)
	}
	if _, err := pluginhost.Of(p).GetPrompt(ctx, &pluginhost.PromptRequest{Name: "nope"}); !errors.Is(err, ErrUnknownPrompt) {
		t.Errorf("GetPrompt(unknown) = %v, want ErrUnknownPrompt", err)
	}
	params := `{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"q","value":"v"}}`
	if res, err := pluginhost.Of(p).Complete(ctx, json.RawMessage(params)); err != nil || !strings.Contains(string(res), `ref/prompt`) {
		t.Errorf("Complete = %s, %v; want the proxy's answer to the params as they were", res, err)
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if diff := cmp.Diff([]string{"file:///r", "file:///nope", "file:///broken"}, fp.reads); diff != "" {
		t.Errorf("reads (-want +got):\n%s", diff)
	}
}

// A proxy that panics answers the request with an error naming the panic,
// as a handler does: a read, prompt, completion or subscription must not
// take the plugin process down (a tool call already did not).
func TestProxyPanicIsAnError(t *testing.T) {
	t.Parallel()
	boom := func() { panic("proxy bug") }
	fp := &fakeProxy{
		read: func(string, json.RawMessage, *pluginhost.Input) (json.RawMessage, error) { boom(); return nil, nil },
		prompt: func(string, json.RawMessage, json.RawMessage, *pluginhost.Input) (json.RawMessage, error) {
			boom()
			return nil, nil
		},
		complete: func(json.RawMessage) (json.RawMessage, error) { boom(); return nil, nil },
		call:     func(context.Context, *pluginhost.ProxyCall) (json.RawMessage, error) { boom(); return nil, nil },
	}
	p := New("proxy", "0")
	pluginhost.Of(p).SetProxy(panickingSubscribe{fp})
	p.Offer(Offers{Resources: true, ResourceSubscriptions: true, Prompts: true, Completions: true})
	ctx := t.Context()
	for name, f := range map[string]func() error{
		"ReadResource": func() error {
			_, err := pluginhost.Of(p).ReadResource(ctx, &pluginhost.ReadRequest{URI: "file:///r"})
			return err
		},
		"GetPrompt": func() error {
			_, err := pluginhost.Of(p).GetPrompt(ctx, &pluginhost.PromptRequest{Name: "p"})
			return err
		},
		"Complete": func() error {
			_, err := pluginhost.Of(p).Complete(ctx, json.RawMessage(`{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"q","value":"v"}}`))
			return err
		},
		"SubscribeResource": func() error { return p.proxySubscribe(ctx, p.getProxy(), "file:///r", true) },
	} {
		err := func() (err error) {
			defer func() {
				if v := recover(); v != nil {
					err = fmt.Errorf("PANICKED: %v", v)
				}
			}()
			return f()
		}()
		if err == nil || strings.HasPrefix(err.Error(), "PANICKED") || !strings.Contains(err.Error(), "proxy bug") {
			t.Errorf("%s with a panicking proxy = %v; want an error naming the panic", name, err)
		}
	}
}

type panickingSubscribe struct{ *fakeProxy }

func (panickingSubscribe) SubscribeResource(context.Context, string, bool) error { panic("proxy bug") }
