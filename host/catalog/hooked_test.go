package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	hookchain "github.com/plughost/plughost/host/hooks"
	"github.com/plughost/plughost/host/tool"
)

// hookFunc is a tool.HookAsker whose answers a function gives, recording
// each question (hook@point:item).
type hookFunc struct {
	f     func(q *tool.HookCall) *tool.HookAnswer
	mu    sync.Mutex
	asked []string
}

func (h *hookFunc) AskHook(_ context.Context, _ string, q *tool.HookCall) (*tool.HookAnswer, error) {
	h.mu.Lock()
	h.asked = append(h.asked, q.Hook+"@"+string(q.Point)+":"+cmpOr(q.Item.Exposed, q.Item.URI))
	h.mu.Unlock()
	if a := h.f(q); a != nil {
		return a, nil
	}
	return &tool.HookAnswer{Decision: tool.HookPass}, nil
}

func (h *hookFunc) questions() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.asked, " ")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// hookedCatalog returns a catalog whose hooks are blocks over h.
func hookedCatalog(t *testing.T, h tool.HookAsker, blocks ...config.Hook) *Catalog {
	t.Helper()
	chain, err := hookchain.New(blocks, h, &hookchain.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return New(&Options{Logger: hclog.NewNullLogger(), Hooks: chain})
}

func hookBlock(name, plugin string, points ...string) config.Hook {
	return config.Hook{Name: name, Plugin: plugin, On: points, Mode: "enforce", OnError: "refuse", Timeout: time.Second}
}

func rewrite(v string) *tool.HookAnswer {
	return &tool.HookAnswer{Decision: tool.HookRewrite, Rewritten: json.RawMessage(v)}
}

// A call's arguments pass before_call and its result after_call: the
// provider gets the rewritten arguments, the caller the redacted result;
// each rewrite is checked against the tool's schemas; a hook's own
// plugin's tools are not asked about.
func TestCallHooks(t *testing.T) {
	t.Parallel()
	const def = `{"name":"fetch","inputSchema":{"type":"object","properties":{"url":{"type":"string"}}},` +
		`"outputSchema":{"type":"object","properties":{"body":{"type":"string"}}}}`
	for name, tc := range map[string]struct {
		before, after string // the rewrites; "" passes
		refuse        tool.HookPoint
		wantArgs      string // what the provider got; "" when not called
		want          string // the result, or the error
	}{
		"pass": {wantArgs: `{"url":"https://a.example/?key=AKIA1"}`,
			want: `{"content":[{"type":"text","text":"AKIA1"}],"structuredContent":{"body":"AKIA1"}}`},
		"rewrite both": {before: `{"url":"https://a.example/?key=[REDACTED]"}`, after: `{"content":[{"type":"text","text":"[REDACTED]"}],"structuredContent":{"body":"[REDACTED]"}}`,
			wantArgs: `{"url":"https://a.example/?key=[REDACTED]"}`, want: `{"content":[{"type":"text","text":"[REDACTED]"}],"structuredContent":{"body":"[REDACTED]"}}`},
		"refused before": {refuse: tool.BeforeCall, want: `refused by hook "guard": no`},
		"refused after":  {refuse: tool.AfterCall, wantArgs: `{"url":"https://a.example/?key=AKIA1"}`, want: `refused by hook "guard": no`},
		"arguments break the inputSchema": {before: `{"url":7}`,
			want: `refused by hook "guard": its rewrite breaks the schema: invalid arguments for tool "fetch": /url: must be string, got number`},
		"result breaks the outputSchema": {after: `{"content":[],"structuredContent":{"body":1}}`, wantArgs: `{"url":"https://a.example/?key=AKIA1"}`,
			want: `refused by hook "guard": its rewrite breaks the schema: tool "fetch" returned a result that breaks its outputSchema: structuredContent/body: must be string, got number`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := &hookFunc{f: func(q *tool.HookCall) *tool.HookAnswer {
				switch {
				case q.Point == tc.refuse:
					return &tool.HookAnswer{Decision: tool.HookRefuse, Reason: "no"}
				case q.Point == tool.BeforeCall && tc.before != "":
					return rewrite(tc.before)
				case q.Point == tool.AfterCall && tc.after != "":
					return rewrite(tc.after)
				}
				return nil
			}}
			c := hookedCatalog(t, h, hookBlock("guard", "guards", "before_call", "after_call"))
			p := &fakeProvider{name: "web", tools: []tool.Def{{Name: "fetch", JSON: json.RawMessage(def)}},
				call: func(context.Context, *tool.Call) (json.RawMessage, error) {
					return json.RawMessage(`{"content":[{"type":"text","text":"AKIA1"}],"structuredContent":{"body":"AKIA1"}}`), nil
				}}
			own := newProvider("guards", "own")
			c.Set(p)
			c.Set(own)
			res, err := c.CallTool(context.Background(), &tool.Call{Name: "fetch", Arguments: json.RawMessage(`{"url":"https://a.example/?key=AKIA1"}`)})
			got := string(res)
			if err != nil {
				got = err.Error()
				if !errors.Is(err, tool.ErrRefused) {
					t.Errorf("the error %v does not wrap tool.ErrRefused", err)
				}
			}
			if got != tc.want {
				t.Errorf("CallTool: %s\nwant %s", got, tc.want)
			}
			calls := p.received()
			switch {
			case tc.wantArgs == "" && len(calls) != 0:
				t.Errorf("the provider was called with %s", calls[0].Arguments)
			case tc.wantArgs != "" && (len(calls) != 1 || string(calls[0].Arguments) != tc.wantArgs):
				t.Errorf("the provider got %v, want arguments %s", calls, tc.wantArgs)
			}
			if _, err := c.CallTool(context.Background(), &tool.Call{Name: "own"}); err != nil {
				t.Errorf("the hook plugin's own tool: %v", err)
			}
			if strings.Contains(h.questions(), ":own") {
				t.Errorf("a hook was asked about its own plugin's tool: %s", h.questions())
			}
		})
	}
}

// A hook whose match selects no call is never asked, and the call goes
// on as without hooks.
func TestCallHooksMatchNothing(t *testing.T) {
	t.Parallel()
	h := &hookFunc{f: func(*tool.HookCall) *tool.HookAnswer {
		return &tool.HookAnswer{Decision: tool.HookRefuse, Reason: "no"}
	}}
	b := hookBlock("vault", "guards", "before_call", "after_call")
	b.Match = "item.plugin == 'vault'"
	c := hookedCatalog(t, h, b)
	c.Set(newProvider("web", "fetch"))
	res, err := c.CallTool(context.Background(), &tool.Call{Name: "fetch"})
	if err != nil || !strings.Contains(string(res), "web:fetch") {
		t.Errorf("CallTool: %s, %v", res, err)
	}
	if q := h.questions(); q != "" {
		t.Errorf("asked: %s", q)
	}
}

// Reads and prompt gets pass their hooks: a refusal names the hook, a
// rewrite of a read's result or a get's arguments and result is what the
// client and the provider see, and checked as a ReadResourceResult or the
// prompt's arguments.
func TestReadAndGetHooks(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	answers := map[tool.HookPoint]*tool.HookAnswer{}
	h := &hookFunc{f: func(q *tool.HookCall) *tool.HookAnswer {
		mu.Lock()
		defer mu.Unlock()
		return answers[q.Point]
	}}
	set := func(p tool.HookPoint, a *tool.HookAnswer) {
		mu.Lock()
		answers[p] = a
		mu.Unlock()
	}
	c := hookedCatalog(t, h, hookBlock("g", "guards", "before_read", "after_read", "before_get", "after_get"))
	srv := newServer("docs").with("file:///a", "greet:who!")
	c.Set(srv)
	ctx := context.Background()

	set(tool.AfterRead, rewrite(`{"contents":[{"uri":"file:///a","text":"[REDACTED]"}]}`))
	if res, err := c.ReadResource(ctx, &tool.Read{URI: "file:///a"}); err != nil || !strings.Contains(string(res), "[REDACTED]") {
		t.Errorf("after_read rewrite: %s, %v", res, err)
	}
	set(tool.AfterRead, rewrite(`{"text":"x"}`))
	if _, err := c.ReadResource(ctx, &tool.Read{URI: "file:///a"}); err == nil || !strings.Contains(err.Error(), `refused by hook "g": its rewrite breaks the schema: resource "file:///a" of provider "docs": the provider's result is not a ReadResourceResult`) {
		t.Errorf("after_read bad rewrite: %v", err)
	}
	set(tool.BeforeRead, &tool.HookAnswer{Decision: tool.HookRefuse, Reason: "private"})
	before := len(srv.reads)
	if _, err := c.ReadResource(ctx, &tool.Read{URI: "file:///a"}); !errors.Is(err, tool.ErrRefused) || err.Error() != `refused by hook "g": private` {
		t.Errorf("before_read refusal: %v", err)
	}
	if len(srv.reads) != before {
		t.Error("the provider was read after before_read refused")
	}

	set(tool.BeforeGet, rewrite(`{"who":"[name]"}`))
	set(tool.AfterGet, rewrite(`{"messages":[{"role":"user","content":{"type":"text","text":"redacted"}}]}`))
	res, err := c.GetPrompt(ctx, &tool.PromptGet{Name: "greet", Arguments: json.RawMessage(`{"who":"Alice Example"}`)})
	if err != nil || !strings.Contains(string(res), "redacted") {
		t.Errorf("after_get rewrite: %s, %v", res, err)
	}
	if gets := srv.gets; len(gets) != 1 || string(gets[0].Arguments) != `{"who":"[name]"}` {
		t.Errorf("the provider got %v, want the rewritten arguments", gets)
	}
	set(tool.BeforeGet, rewrite(`{"whom":"x"}`))
	if _, err := c.GetPrompt(ctx, &tool.PromptGet{Name: "greet", Arguments: json.RawMessage(`{"who":"A"}`)}); err == nil || !strings.Contains(err.Error(), "/who: missing required argument") {
		t.Errorf("before_get bad rewrite: %v", err)
	}
	if q := h.questions(); !strings.Contains(q, "g@before_read:file:///a g@after_read:file:///a") || !strings.Contains(q, "g@before_get:greet g@after_get:greet") {
		t.Errorf("asked: %s", q)
	}
}
