package catalog

import (
	"context"
	"encoding/json"

	"github.com/plughost/plughost/host/tool"
)

// The operator's hooks (Options.Hooks, built by host/hooks from the
// configuration) around every call, read and prompt get:
//
//   - before_call, once the call is routed, its arguments defaulted and
//     checked and the caller's guard passed: a hook may refuse or rewrite
//     the arguments, which are checked against the tool's inputSchema
//     again (a rewrite that breaks it refuses, naming the hook);
//   - after_call, on the provider's result once it passed the tool's
//     outputSchema: a hook may refuse, or rewrite (redact) the result,
//     which is checked against the outputSchema again. A failure of the
//     provider (an error, an input request) is not a result and is not
//     asked about; an isError result is;
//   - before_read and after_read around a resource read (a rewrite at
//     before_read is ignored: a read has no arguments; after_read's is
//     checked as a ReadResourceResult);
//   - before_get and after_get around a prompt get (arguments checked as
//     the prompt declares them; the result as a GetPromptResult).
//
// A refusal is an error wrapping tool.ErrRefused that names the hook: the
// protocol layer answers a call with an isError result, a read or get
// with an error. Since a call starts on a session's read loop and is
// answered on its provider's goroutine (a plugin's stream reader), neither
// of which may wait for a hook, a call a hook will see (Selects) is asked
// about on a goroutine of its own; one that no hook sees costs the check
// only. Every path to a provider (a session's call, a task's, an input
// round's retry, a stateless request, tool search's call_tool) comes
// through StartCall, ReadResource or GetPrompt, and so through the hooks.

// selector is what a tool.Hooks may implement to say, without asking a
// hook, whether any would be asked about q (host/hooks' Chain does).
type selector interface {
	Selects(q *tool.HookCall) bool
}

// hooks is the catalog's view of Options.Hooks.
type hooks struct {
	h   tool.Hooks // nil for none
	sel selector   // h's, when it has one
}

func newHooks(h tool.Hooks) hooks {
	sel, _ := h.(selector)
	return hooks{h: h, sel: sel}
}

// question returns a question of point about it (defined by def) for
// caller, or nil when no hook runs at point.
func (hs hooks) question(point tool.HookPoint, caller *tool.Caller, it *tool.Item, def json.RawMessage) *tool.HookCall {
	if hs.h == nil || !hs.h.Has(point) {
		return nil
	}
	return &tool.HookCall{Point: point, Caller: caller, Item: *it, Definition: def}
}

// selects reports whether a hook will be asked about q (true when the
// hooks cannot say).
func (hs hooks) selects(q *tool.HookCall) bool {
	return hs.sel == nil || hs.sel.Selects(q)
}

// beforeCall asks the before_call hooks about a call of r, exposed under
// that name, and returns the arguments to call it with.
func (hs hooks) beforeCall(ctx context.Context, q *tool.HookCall, r *route, exposed string) (json.RawMessage, error) {
	q.Check = func(args json.RawMessage) string {
		if absent(args) {
			return "the arguments are absent"
		}
		_, msg := r.check.CheckArguments(exposed, args)
		return msg
	}
	return hs.h.Apply(ctx, q)
}

// afterSelects reports whether an after_call hook will be asked about a
// call of r by caller with args.
func (hs hooks) afterSelects(caller *tool.Caller, r *route, args json.RawMessage) bool {
	q := hs.question(tool.AfterCall, caller, r.item, r.def)
	if q == nil {
		return false
	}
	q.Arguments = args
	return hs.selects(q)
}

// afterCall asks the after_call hooks about a result of r, exposed under
// that name: the result the client gets, or the refusal.
func (hs hooks) afterCall(ctx context.Context, q *tool.HookCall, r *route, exposed string) (json.RawMessage, error) {
	q.Check = func(res json.RawMessage) string { return r.check.CheckResult(exposed, res) }
	return hs.h.Apply(ctx, q)
}

// ask asks the hooks of point about it, with payload (arguments at a
// before_ point, the result at an after_ point) checked by check, on the
// caller's goroutine (reads and gets run on a worker). It returns payload
// as the hooks leave it.
func (hs hooks) ask(ctx context.Context, point tool.HookPoint, caller *tool.Caller, it *tool.Item, def, args, res json.RawMessage, check func(json.RawMessage) string) (json.RawMessage, error) {
	q := hs.question(point, caller, it, def)
	if q == nil {
		if res != nil {
			return res, nil
		}
		return args, nil
	}
	q.Arguments, q.Result, q.Check = args, res, check
	return hs.h.Apply(ctx, q)
}
