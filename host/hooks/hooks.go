// Package hooks runs the operator's guardrails: the hooks block of the
// configuration (host/config's Hook), compiled into a Chain that the
// catalog asks around every call, read and prompt get, and the plugin
// manager about every definition (tool.Hooks). Each hook is a plugin that
// offers hook points; the chain reaches it through a tool.HookAsker (the
// plugin manager, over the plugin's Hooks stream).
//
// For one question (a tool.HookCall) the chain asks, in the order the
// hooks are written, every hook that
//
//   - runs at the question's point (its on) and is not off,
//   - is not served by the plugin the question is about (a hook never
//     judges its own plugin's items), and
//   - whose match holds for the question's caller, item and arguments
//     (one that cannot be evaluated does not hold).
//
// Each sees what the one before left: a rewrite replaces the arguments,
// result or definition for the next hook and for the request, once
// tool.HookCall.Check passed it (a rewrite that breaks the tool's schema
// refuses the request, naming the hook, whatever its on_error). An answer
// of refuse (or hide, at on_definitions) ends the question: Apply returns
// an error wrapping tool.ErrRefused whose text is `refused by hook "NAME":
// REASON` (`hidden by hook …` for a hide), which the protocol layer
// answers as an isError result. A hook in mode permissive changes
// nothing: what it would have done is logged, counted and audited
// ("would_refuse", "would_rewrite", "would_hide"), and its failures are
// reported but never refuse, whatever its on_error.
//
// A hook that fails — its plugin cannot be reached, its answer is
// malformed, or it does not answer within its timeout — is an "error" or
// "timeout" decision, and its on_error decides: "refuse" refuses the
// request (naming the hook and the failure), "pass" goes on as if it had
// passed. A request whose own context ends while a hook is asked ends
// with its context's error: that is the client's doing, not the hook's.
//
// The question's context carries the hook's timeout as its deadline. An
// asker that must first start a lazy plugin takes the time that remains
// when it is asked as the hook's budget and applies it once the plugin is
// ready (the start is bounded by the plugin's own start timeout).
package hooks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/access"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// The decisions counted and reported beyond tool's HookDecisions: a
// failed or timed-out hook, and what a permissive one would have done.
const (
	DecisionError        tool.HookDecision = "error"
	DecisionTimeout      tool.HookDecision = "timeout"
	DecisionWouldRefuse  tool.HookDecision = "would_refuse"
	DecisionWouldRewrite tool.HookDecision = "would_rewrite"
	DecisionWouldHide    tool.HookDecision = "would_hide"
)

// MaxReason bounds the reason of an answer as the chain passes it on (in
// a refusal, a log line, the audit log): a longer one is cut, with "…".
const MaxReason = 1 << 10

// Decision is what one hook decided about one question, as Options.Observe
// learns it.
type Decision struct {
	// Hook is the hook's name; Plugin the plugin that serves it.
	Hook, Plugin string
	// Point is where it ran.
	Point tool.HookPoint
	// Item is what the question was about.
	Item tool.Item
	// Caller is who the request acts for; nil when none is known (and at
	// on_definitions).
	Caller *tool.Caller
	// Decision is pass, refuse, rewrite, hide, error, timeout, or a
	// permissive hook's would_refuse, would_rewrite or would_hide.
	Decision tool.HookDecision
	// Reason is the hook's reason (refuse, hide, optionally rewrite), or
	// what failed (error, timeout).
	Reason string
	// Duration is how long the hook took to answer.
	Duration time.Duration
}

// Options configures a Chain. A nil *Options gives the defaults.
type Options struct {
	// Logger gets a line per decision other than pass (refusals and
	// failures at WARN, rewrites and permissive ones at INFO). Nil means
	// hclog.Default() named "hooks".
	Logger hclog.Logger
	// Observe, when not nil, learns every decision, pass included, on the
	// request's goroutine (metrics count them, the audit log writes the
	// others). It must be quick.
	Observe func(*Decision)
}

// Chain is the compiled hooks block. It implements tool.Hooks and is safe
// for concurrent use.
type Chain struct {
	ask     tool.HookAsker
	log     hclog.Logger
	observe func(*Decision)
	// at holds, per point (by pointIndex), its hooks in the order
	// written (none off).
	at [numPoints][]*hook
}

// numPoints is how many hook points there are.
const numPoints = 7

// pointIndex is p's index in tool.HookPoints; -1 for no point.
func pointIndex(p tool.HookPoint) int {
	switch p {
	case tool.BeforeCall:
		return 0
	case tool.AfterCall:
		return 1
	case tool.BeforeRead:
		return 2
	case tool.AfterRead:
		return 3
	case tool.BeforeGet:
		return 4
	case tool.AfterGet:
		return 5
	case tool.OnDefinitions:
		return 6
	}
	return -1
}

// hooksAt are the hooks of point p.
func (c *Chain) hooksAt(p tool.HookPoint) []*hook {
	if i := pointIndex(p); c != nil && i >= 0 {
		return c.at[i]
	}
	return nil
}

// hook is one compiled hook block.
type hook struct {
	name, plugin string
	match        *access.Match // nil: every question
	permissive   bool
	passOnError  bool
	timeout      time.Duration
	// memo keeps what an item-only match (access.Match.ItemOnly) said of
	// each item, up to maxMemo items: a request then costs a map look-up
	// where it cost an evaluation.
	memo memo
}

// maxMemo bounds the items a hook's memo keeps (about 150 bytes and the
// names each); beyond, a match is evaluated at each request.
const maxMemo = 1 << 14

// memo is what an item-only match said of items.
type memo struct {
	mu sync.RWMutex
	m  map[itemKey]bool
}

// itemKey is what an item-only match reads of an item.
type itemKey struct {
	kind                         tool.ItemKind
	name, exposed, uri, provider string
}

func (m *memo) get(k itemKey) (selected, known bool) {
	m.mu.RLock()
	selected, known = m.m[k]
	m.mu.RUnlock()
	return selected, known
}

func (m *memo) put(k itemKey, selected bool) {
	m.mu.Lock()
	if m.m == nil {
		m.m = map[itemKey]bool{}
	}
	if len(m.m) < maxMemo {
		m.m[k] = selected
	}
	m.mu.Unlock()
}

var _ tool.Hooks = (*Chain)(nil)

// New compiles the hooks block (config.Parse checked it) over ask. No
// hooks (or only hooks that are off) give nil: a nil *Chain has no hook
// anywhere.
func New(hooks []config.Hook, ask tool.HookAsker, opts *Options) (*Chain, error) {
	if opts == nil {
		opts = &Options{}
	}
	some := false // a hook at some point
	c := &Chain{ask: ask, log: cmp.Or(opts.Logger, hclog.Default().Named("hooks")), observe: opts.Observe}
	for _, h := range hooks {
		if h.Mode == config.HookOff {
			continue
		}
		ch := &hook{name: h.Name, plugin: h.Plugin, permissive: h.Mode == config.HookPermissive,
			passOnError: h.OnError == config.HookOnErrorPass, timeout: cmp.Or(h.Timeout, config.DefaultHookTimeout)}
		if h.Match != "" {
			m, err := access.CompileMatch(access.Source{Name: "hook " + h.Name, Expr: h.Match, File: "hook " + h.Name, Line: 1, Column: 1})
			if err != nil {
				return nil, err
			}
			ch.match = m
		}
		for _, p := range h.On {
			i := pointIndex(tool.HookPoint(p))
			if i < 0 {
				return nil, fmt.Errorf("hook %q: unknown hook point %q", h.Name, p)
			}
			c.at[i] = append(c.at[i], ch)
			some = true
		}
	}
	if !some {
		return nil, nil
	}
	return c, nil
}

// Plugins returns the plugins that serve the chain's hooks, each once,
// in the order first named.
func (c *Chain) Plugins() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, p := range tool.HookPoints {
		for _, h := range c.hooksAt(p) {
			if !slices.Contains(out, h.plugin) {
				out = append(out, h.plugin)
			}
		}
	}
	return out
}

// Has reports whether a hook runs at point.
func (c *Chain) Has(point tool.HookPoint) bool {
	return len(c.hooksAt(point)) > 0
}

// Selects reports whether some hook would be asked about q: one of
// q.Point, not served by q.Item.Provider, whose match holds. It asks none.
// The catalog calls it on the goroutine that starts a request, to leave
// that goroutine only for a request a hook will see.
func (c *Chain) Selects(q *tool.HookCall) bool {
	if c == nil {
		return false
	}
	for _, h := range c.hooksAt(q.Point) {
		if h.selects(q) {
			return true
		}
	}
	return false
}

func (h *hook) selects(q *tool.HookCall) bool {
	if h.plugin == q.Item.Provider {
		return false
	}
	if h.match == nil {
		return true
	}
	if !h.match.ItemOnly() {
		ok, _ := h.match.Matches(q.Caller, &q.Item, q.Arguments)
		return ok
	}
	k := itemKey{q.Item.Kind, q.Item.Name, q.Item.Exposed, q.Item.URI, q.Item.Provider}
	if ok, known := h.memo.get(k); known {
		return ok
	}
	ok, _ := h.match.Matches(nil, &q.Item, nil)
	h.memo.put(k, ok)
	return ok
}

// Apply asks q.Point's hooks about q (see the package doc and
// tool.Hooks.Apply). q is not modified.
func (c *Chain) Apply(ctx context.Context, q *tool.HookCall) (json.RawMessage, error) {
	cur := payload(q)
	if c == nil {
		return cur, nil
	}
	for _, h := range c.hooksAt(q.Point) {
		ask := *q
		ask.Hook, ask.Check = h.name, nil
		setPayload(&ask, cur) // its match, too, sees what the hooks before left
		if !h.selects(&ask) {
			continue
		}
		start := time.Now()
		hctx, span := trace.Start(ctx, "hook", h.name, oteltrace.SpanKindInternal, trace.HookKey.String(h.name),
			trace.HookPointKey.String(string(q.Point)), trace.ProviderKey.String(h.plugin))
		ans, err := c.askOne(hctx, h, &ask)
		d := &Decision{Hook: h.name, Plugin: h.plugin, Point: q.Point, Item: q.Item, Caller: q.Caller, Duration: time.Since(start)}
		if err == nil {
			span.SetAttributes(trace.HookDecisionKey.String(string(ans.Decision)))
		}
		trace.End(span, err)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			d.Decision, d.Reason = DecisionError, cut(err.Error())
			if errors.Is(err, context.DeadlineExceeded) {
				d.Decision, d.Reason = DecisionTimeout, fmt.Sprintf("no answer within %v", h.timeout)
			}
			c.report(d)
			if h.passOnError || h.permissive { // a permissive hook changes nothing, failing included
				continue
			}
			return nil, tool.Errorf(tool.ErrRefused, "refused by hook %q: it failed (%s), and its on_error is refuse", h.name, d.Reason)
		}
		d.Decision, d.Reason = ans.Decision, ans.Reason
		switch ans.Decision {
		case tool.HookPass:
			c.report(d)
		case tool.HookRewrite:
			if h.permissive {
				d.Decision = DecisionWouldRewrite
				c.report(d)
				continue
			}
			if q.Check != nil {
				if msg := q.Check(ans.Rewritten); msg != "" {
					d.Decision, d.Reason = DecisionError, "its rewrite breaks the schema: "+msg
					c.report(d)
					return nil, tool.Errorf(tool.ErrRefused, "refused by hook %q: %s", h.name, d.Reason)
				}
			}
			c.report(d)
			cur = ans.Rewritten
		case tool.HookRefuse, tool.HookHide:
			verb := "refused"
			if ans.Decision == tool.HookHide {
				verb = "hidden"
			}
			if h.permissive {
				d.Decision = map[tool.HookDecision]tool.HookDecision{tool.HookRefuse: DecisionWouldRefuse, tool.HookHide: DecisionWouldHide}[ans.Decision]
				c.report(d)
				continue
			}
			c.report(d)
			return nil, tool.Errorf(tool.ErrRefused, "%s by hook %q: %s", verb, h.name, cmp.Or(d.Reason, "no reason given"))
		}
	}
	return cur, nil
}

// askOne asks h about q within h's timeout, and checks the answer: a
// decision the point allows, a rewrite's JSON (an object, but for a
// result or definition, which must be objects too). A malformed answer
// is an error.
func (c *Chain) askOne(ctx context.Context, h *hook, q *tool.HookCall) (*tool.HookAnswer, error) {
	qctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	ans, err := c.ask.AskHook(qctx, h.plugin, q)
	if err != nil {
		if qctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		return nil, err
	}
	if ans == nil {
		return nil, errors.New("the hook gave no answer")
	}
	a := *ans
	a.Reason = cut(a.Reason)
	switch a.Decision {
	case tool.HookPass, tool.HookRefuse:
	case tool.HookHide:
		if q.Point != tool.OnDefinitions {
			return nil, fmt.Errorf("the hook answered hide at %s; hide is for on_definitions only", q.Point)
		}
	case tool.HookRewrite:
		if !isObject(a.Rewritten) {
			return nil, fmt.Errorf("the hook's rewrite at %s is not a JSON object", q.Point)
		}
	default:
		return nil, fmt.Errorf("the hook answered %q, which is none of pass, refuse, rewrite, hide", cut(string(a.Decision)))
	}
	return &a, nil
}

// report logs d and hands it to Observe.
func (c *Chain) report(d *Decision) {
	if c.observe != nil {
		c.observe(d)
	}
	if d.Decision == tool.HookPass {
		return
	}
	args := []any{"hook", d.Hook, "point", d.Point, "kind", d.Item.Kind, "item", ItemName(&d.Item), "provider", d.Item.Provider, "decision", d.Decision}
	if d.Reason != "" {
		args = append(args, "reason", d.Reason)
	}
	switch d.Decision {
	case tool.HookRefuse, tool.HookHide, DecisionError, DecisionTimeout:
		c.log.Warn("hook decided", args...)
	default:
		c.log.Info("hook decided", args...)
	}
}

// payload is what q's point hands on: the definition, result or arguments.
func payload(q *tool.HookCall) json.RawMessage {
	switch q.Point {
	case tool.OnDefinitions:
		return q.Definition
	case tool.AfterCall, tool.AfterRead, tool.AfterGet:
		return q.Result
	}
	return q.Arguments
}

// setPayload sets what q's point hands on to v.
func setPayload(q *tool.HookCall, v json.RawMessage) {
	switch q.Point {
	case tool.OnDefinitions:
		q.Definition = v
	case tool.AfterCall, tool.AfterRead, tool.AfterGet:
		q.Result = v
	default:
		q.Arguments = v
	}
}

// ItemName names it as a log line or an audit line does: a tool's or
// prompt's exposed name (its own when it has none), else its URI.
func ItemName(it *tool.Item) string {
	switch {
	case it.Exposed != "":
		return it.Exposed
	case it.Name != "" && it.URI == "":
		return it.Name
	}
	return cmp.Or(it.URI, it.Name)
}

// isObject reports whether b is a JSON object.
func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// cut bounds a reason to MaxReason bytes (at a rune's start).
func cut(s string) string {
	if len(s) <= MaxReason {
		return s
	}
	i := MaxReason
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}
