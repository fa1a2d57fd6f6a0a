package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/tool"
)

// asker answers each hook by its name with answers[name] (pass when
// absent), recording who it asked and what they saw.
type asker struct {
	mu      sync.Mutex
	answers map[string]func(ctx context.Context, q *tool.HookCall) (*tool.HookAnswer, error)
	asked   []string
	saw     []string // the payload each hook saw
}

func (a *asker) AskHook(ctx context.Context, plugin string, q *tool.HookCall) (*tool.HookAnswer, error) {
	a.mu.Lock()
	a.asked = append(a.asked, q.Hook+"@"+plugin)
	a.saw = append(a.saw, string(payload(q)))
	f := a.answers[q.Hook]
	a.mu.Unlock()
	if f == nil {
		return &tool.HookAnswer{Decision: tool.HookPass}, nil
	}
	return f(ctx, q)
}

func answer(d tool.HookDecision, reason, rewritten string) func(context.Context, *tool.HookCall) (*tool.HookAnswer, error) {
	return func(context.Context, *tool.HookCall) (*tool.HookAnswer, error) {
		return &tool.HookAnswer{Decision: d, Reason: reason, Rewritten: json.RawMessage(rewritten)}, nil
	}
}

func block(name, plugin string, points ...string) config.Hook {
	return config.Hook{Name: name, Plugin: plugin, On: points, Mode: "enforce", OnError: "refuse", Timeout: time.Second}
}

func newChain(t *testing.T, a *asker, hooks ...config.Hook) (*Chain, *[]Decision) {
	t.Helper()
	var mu sync.Mutex
	var seen []Decision
	c, err := New(hooks, a, &Options{Logger: hclog.NewNullLogger(), Observe: func(d *Decision) {
		mu.Lock()
		seen = append(seen, *d)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c, &seen
}

func call(point tool.HookPoint, provider, args string) *tool.HookCall {
	q := &tool.HookCall{Point: point, Caller: &tool.Caller{Subject: "alice"},
		Item: tool.Item{Kind: tool.ItemTool, Name: "write", Exposed: "files_write", Provider: provider}}
	setPayload(q, json.RawMessage(args))
	return q
}

func decisions(ds []Decision) string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Hook+":"+string(d.Decision))
	}
	return strings.Join(out, " ")
}

// Hooks run in the order written, each seeing what the one before left;
// a hook never judges its own plugin's items; match selects.
func TestOrderRewriteSkipAndMatch(t *testing.T) {
	t.Parallel()
	a := &asker{answers: map[string]func(context.Context, *tool.HookCall) (*tool.HookAnswer, error){
		"first":  answer(tool.HookRewrite, "", `{"path":"/srv/a"}`),
		"second": answer(tool.HookRewrite, "normalised", `{"path":"/srv/b"}`),
	}}
	vault := block("vault-only", "v", "before_call")
	vault.Match = "item.plugin == 'vault'"
	c, seen := newChain(t, a, block("first", "g1", "before_call"), block("own", "files", "before_call"), vault,
		block("second", "g2", "before_call", "after_call"), block("after", "g3", "after_call"))
	got, err := c.Apply(context.Background(), call(tool.BeforeCall, "files", `{"path":"/etc"}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"path":"/srv/b"}` {
		t.Errorf("arguments %s, want the second rewrite's", got)
	}
	if strings.Join(a.asked, " ") != "first@g1 second@g2" {
		t.Errorf("asked %v, want first then second (own plugin and non-matching skipped)", a.asked)
	}
	if strings.Join(a.saw, " ") != `{"path":"/etc"} {"path":"/srv/a"}` {
		t.Errorf("the hooks saw %v", a.saw)
	}
	if decisions(*seen) != "first:rewrite second:rewrite" {
		t.Errorf("decisions %s", decisions(*seen))
	}
	if !c.Selects(call(tool.BeforeCall, "files", `{}`)) || c.Selects(call(tool.BeforeRead, "files", `{}`)) {
		t.Error("Selects: want true at before_call, false at before_read")
	}
	if c.Has(tool.OnDefinitions) || !c.Has(tool.AfterCall) {
		t.Error("Has")
	}
}

// A refusal ends the question naming the hook and its reason; later
// hooks are not asked.
func TestRefuse(t *testing.T) {
	t.Parallel()
	a := &asker{answers: map[string]func(context.Context, *tool.HookCall) (*tool.HookAnswer, error){
		"secrets": answer(tool.HookRefuse, "an AWS access key in /token", ""),
	}}
	c, seen := newChain(t, a, block("secrets", "s", "after_call"), block("later", "l", "after_call"))
	_, err := c.Apply(context.Background(), call(tool.AfterCall, "files", `{"content":[]}`))
	if !errors.Is(err, tool.ErrRefused) || err.Error() != `refused by hook "secrets": an AWS access key in /token` {
		t.Errorf("error %v", err)
	}
	if decisions(*seen) != "secrets:refuse" || len(a.asked) != 1 {
		t.Errorf("decisions %s, asked %v", decisions(*seen), a.asked)
	}
}

// A permissive hook changes nothing but reports what it would have done.
func TestPermissive(t *testing.T) {
	t.Parallel()
	a := &asker{answers: map[string]func(context.Context, *tool.HookCall) (*tool.HookAnswer, error){
		"r": answer(tool.HookRefuse, "no", ""),
		"w": answer(tool.HookRewrite, "", `{"x":1}`),
		"h": answer(tool.HookHide, "poisoned", ""),
	}}
	r, w, h := block("r", "p", "before_call"), block("w", "p", "before_call", "on_definitions"), block("h", "p", "on_definitions")
	r.Mode, w.Mode, h.Mode = "permissive", "permissive", "permissive"
	off := block("off", "p", "before_call")
	off.Mode = "off"
	c, seen := newChain(t, a, r, w, off, h)
	got, err := c.Apply(context.Background(), call(tool.BeforeCall, "files", `{"y":2}`))
	if err != nil || string(got) != `{"y":2}` {
		t.Errorf("Apply: %s, %v; want the arguments unchanged", got, err)
	}
	got, err = c.Apply(context.Background(), call(tool.OnDefinitions, "files", `{"name":"write"}`))
	if err != nil || string(got) != `{"name":"write"}` {
		t.Errorf("Apply: %s, %v; want the definition unchanged", got, err)
	}
	if decisions(*seen) != "r:would_refuse w:would_rewrite w:would_rewrite h:would_hide" {
		t.Errorf("decisions %s", decisions(*seen))
	}
	broken := block("broken", "gone", "before_call")
	broken.Mode = "permissive"
	failing := &asker{answers: map[string]func(context.Context, *tool.HookCall) (*tool.HookAnswer, error){
		"broken": func(context.Context, *tool.HookCall) (*tool.HookAnswer, error) {
			return nil, errors.New("no such plugin")
		},
	}}
	fc, fseen := newChain(t, failing, broken)
	if got, err := fc.Apply(context.Background(), call(tool.BeforeCall, "files", `{"y":2}`)); err != nil || string(got) != `{"y":2}` {
		t.Errorf("a permissive hook that fails under on_error refuse: %s, %v; want the arguments unchanged", got, err)
	}
	if decisions(*fseen) != "broken:error" {
		t.Errorf("decisions %s", decisions(*fseen))
	}
	if slices.Contains(a.asked, "off@p") {
		t.Error("a hook that is off was asked")
	}
}

// A hook that fails or does not answer in time refuses under
// on_error = "refuse" and is passed over under "pass"; a malformed answer
// is a failure.
func TestFailures(t *testing.T) {
	t.Parallel()
	hang := func(ctx context.Context, q *tool.HookCall) (*tool.HookAnswer, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	crash := func(context.Context, *tool.HookCall) (*tool.HookAnswer, error) {
		return nil, errors.New("plugin \"s\" exited")
	}
	for name, tc := range map[string]struct {
		f        func(context.Context, *tool.HookCall) (*tool.HookAnswer, error)
		decision string
		text     string
	}{
		"timeout":        {hang, "timeout", `refused by hook "h": it failed (no answer within 20ms), and its on_error is refuse`},
		"crash":          {crash, "error", `refused by hook "h": it failed (plugin "s" exited)`},
		"hide at a call": {answer(tool.HookHide, "x", ""), "error", "hide is for on_definitions only"},
		"bad rewrite":    {answer(tool.HookRewrite, "", `[1]`), "error", "is not a JSON object"},
		"unknown":        {answer("allow", "", ""), "error", `the hook answered "allow"`},
		"nil answer":     {func(context.Context, *tool.HookCall) (*tool.HookAnswer, error) { return nil, nil }, "error", "no answer"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, onError := range []string{"refuse", "pass"} {
				a := &asker{answers: map[string]func(context.Context, *tool.HookCall) (*tool.HookAnswer, error){"h": tc.f}}
				h := block("h", "s", "before_call")
				h.OnError, h.Timeout = onError, 20*time.Millisecond
				c, seen := newChain(t, a, h, block("next", "n", "before_call"))
				got, err := c.Apply(context.Background(), call(tool.BeforeCall, "files", `{"a":1}`))
				switch onError {
				case "refuse":
					if !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), tc.text) {
						t.Errorf("on_error refuse: %v, want an error containing %q", err, tc.text)
					}
					if decisions(*seen) != "h:"+tc.decision {
						t.Errorf("on_error refuse: decisions %s", decisions(*seen))
					}
				case "pass":
					if err != nil || string(got) != `{"a":1}` {
						t.Errorf("on_error pass: %s, %v", got, err)
					}
					if decisions(*seen) != "h:"+tc.decision+" next:pass" {
						t.Errorf("on_error pass: decisions %s", decisions(*seen))
					}
				}
			}
		})
	}
}

// A request whose own context ends while a hook is asked ends with that
// context's error, counted as no decision of the hook's.
func TestRequestCancelled(t *testing.T) {
	t.Parallel()
	asked := make(chan struct{})
	a := &asker{answers: map[string]func(context.Context, *tool.HookCall) (*tool.HookAnswer, error){
		"h": func(ctx context.Context, q *tool.HookCall) (*tool.HookAnswer, error) {
			close(asked)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}}
	c, seen := newChain(t, a, block("h", "s", "before_call"))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-asked; cancel() }()
	if _, err := c.Apply(ctx, call(tool.BeforeCall, "files", `{}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if len(*seen) != 0 {
		t.Errorf("decisions %s, want none", decisions(*seen))
	}
}

// No hooks, or only hooks that are off, make no chain: nil has no hook
// and hands everything back as it came.
func TestNone(t *testing.T) {
	t.Parallel()
	off := block("off", "p", "before_call")
	off.Mode = "off"
	c, err := New([]config.Hook{off}, &asker{}, nil)
	if err != nil || c != nil {
		t.Fatalf("New: %v, %v; want nil, nil", c, err)
	}
	if c.Has(tool.BeforeCall) || c.Selects(call(tool.BeforeCall, "x", `{}`)) || c.Plugins() != nil {
		t.Error("a nil chain has hooks")
	}
	got, err := c.Apply(context.Background(), call(tool.AfterCall, "x", `{"content":[]}`))
	if err != nil || string(got) != `{"content":[]}` {
		t.Errorf("Apply: %s, %v", got, err)
	}
}

// A long reason is cut.
func TestReasonCut(t *testing.T) {
	t.Parallel()
	a := &asker{answers: map[string]func(context.Context, *tool.HookCall) (*tool.HookAnswer, error){
		"h": answer(tool.HookRefuse, strings.Repeat("é", MaxReason), ""),
	}}
	c, _ := newChain(t, a, block("h", "s", "before_call"))
	_, err := c.Apply(context.Background(), call(tool.BeforeCall, "files", `{}`))
	if err == nil || len(err.Error()) > MaxReason+64 || !strings.HasSuffix(err.Error(), "é…") {
		t.Errorf("error of %d bytes: %.80q…", len(err.Error()), err)
	}
}

// A rewrite that fails the question's Check refuses, naming the hook,
// even under on_error = "pass".
func TestRewriteChecked(t *testing.T) {
	t.Parallel()
	a := &asker{answers: map[string]func(context.Context, *tool.HookCall) (*tool.HookAnswer, error){
		"h": answer(tool.HookRewrite, "", `{"path":7}`),
	}}
	h := block("h", "s", "before_call")
	h.OnError = "pass"
	c, seen := newChain(t, a, h)
	q := call(tool.BeforeCall, "files", `{"path":"/a"}`)
	q.Check = func(b json.RawMessage) string {
		if strings.Contains(string(b), `"path":7`) {
			return "/path: must be string, got integer"
		}
		return ""
	}
	_, err := c.Apply(context.Background(), q)
	if !errors.Is(err, tool.ErrRefused) || err.Error() != `refused by hook "h": its rewrite breaks the schema: /path: must be string, got integer` {
		t.Errorf("error %v", err)
	}
	if decisions(*seen) != "h:error" {
		t.Errorf("decisions %s", decisions(*seen))
	}
}

// pointIndex numbers every hook point, in tool.HookPoints' order.
func TestPointIndex(t *testing.T) {
	t.Parallel()
	if len(tool.HookPoints) != numPoints {
		t.Fatalf("%d hook points, numPoints %d", len(tool.HookPoints), numPoints)
	}
	for i, p := range tool.HookPoints {
		if pointIndex(p) != i {
			t.Errorf("pointIndex(%s) = %d, want %d", p, pointIndex(p), i)
		}
	}
	if pointIndex("before_cal") != -1 {
		t.Error("an unknown point has an index")
	}
}

// An item-only match is remembered per item, and tells items apart.
func TestItemOnlyMemo(t *testing.T) {
	t.Parallel()
	b := block("vault", "guards", "before_call")
	b.Match = "item.plugin == 'vault' && item.name == 'write'"
	c, _ := newChain(t, &asker{}, b)
	for range 3 {
		if !c.Selects(call(tool.BeforeCall, "vault", `{}`)) || c.Selects(call(tool.BeforeCall, "files", `{}`)) {
			t.Fatal("Selects: want the vault's write only")
		}
		q := call(tool.BeforeCall, "vault", `{}`)
		q.Item.Name = "read"
		if c.Selects(q) {
			t.Fatal("Selects: the vault's read")
		}
	}
	if n := len(c.hooksAt(tool.BeforeCall)[0].memo.m); n != 3 {
		t.Errorf("the memo holds %d items, want 3", n)
	}
}

// A match on arguments sees them as the hooks before it left them.
func TestMatchSeesRewrite(t *testing.T) {
	t.Parallel()
	a := &asker{answers: map[string]func(context.Context, *tool.HookCall) (*tool.HookAnswer, error){
		"tag": answer(tool.HookRewrite, "", `{"path":"/secret/a"}`),
	}}
	secret := block("secret", "s", "before_call")
	secret.Match = "has(arguments.path) && arguments.path.startsWith('/secret/')"
	c, seen := newChain(t, a, block("tag", "t", "before_call"), secret)
	if _, err := c.Apply(context.Background(), call(tool.BeforeCall, "files", `{"path":"/a"}`)); err != nil {
		t.Fatal(err)
	}
	if decisions(*seen) != "tag:rewrite secret:pass" {
		t.Errorf("decisions %s, want the second hook asked about the rewritten path", decisions(*seen))
	}
}
