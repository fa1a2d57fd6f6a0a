package pluginproto

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// Hooks: a plugin may be a guardrail. The operator names it in a hook
// block of the host's configuration (hooks { hook "NAME" { plugin = … } }),
// and the host asks it, at the points it registered, about every call,
// read and prompt get, and about every definition other plugins list,
// before any client sees them. A hook answers Pass, Refuse (the client
// sees the reason in an isError result naming the hook), Rewrite (the
// arguments, the result or the definition, whole) or, about a definition
// only, Hide.
//
//	p := pluginproto.New("no-rm", "1.0.0")
//	p.AddHook(func(ctx context.Context, q *pluginproto.HookRequest) (pluginproto.HookAnswer, error) {
//		if strings.Contains(string(q.Arguments), "rm -rf") {
//			return pluginproto.Refuse("no recursive deletes"), nil
//		}
//		return pluginproto.Pass(), nil
//	}, pluginproto.BeforeCall)
//	pluginproto.Serve(p)

// HookPoint is where a hook runs.
type HookPoint string

// The hook points a plugin may serve.
const (
	// BeforeCall sees the caller, the tool (its definition) and the
	// arguments: pass, refuse, or rewrite the arguments.
	BeforeCall HookPoint = "before_call"
	// AfterCall sees the same and the CallToolResult: pass, refuse, or
	// rewrite (redact) the result.
	AfterCall HookPoint = "after_call"
	// BeforeRead sees the caller and the resource's URI: pass or refuse.
	BeforeRead HookPoint = "before_read"
	// AfterRead sees the ReadResourceResult: pass, refuse or rewrite it.
	AfterRead HookPoint = "after_read"
	// BeforeGet sees the caller, the prompt and its arguments: pass,
	// refuse, or rewrite the arguments.
	BeforeGet HookPoint = "before_get"
	// AfterGet sees the GetPromptResult: pass, refuse or rewrite it.
	AfterGet HookPoint = "after_get"
	// OnDefinitions sees one tool, prompt, resource or resource template
	// definition as another plugin lists it: pass, hide (with a reason
	// the operator sees), or rewrite the definition.
	OnDefinitions HookPoint = "on_definitions"
)

// HookRequest is one question the host asks a hook.
type HookRequest struct {
	// Point is where the hook runs; Hook the operator's name for it (one
	// plugin may serve several hook blocks, each configured apart).
	Point HookPoint
	Hook  string
	// Caller is who the request acts for; nil at OnDefinitions and when
	// the host knows nobody.
	Caller *Caller
	// Kind is "tool", "prompt", "resource" or "resource_template"; Name
	// the item's own name (its plugin's name for it, or a resource's or
	// template's "name"); Exposed the name clients see (tools and
	// prompts); URI a resource's URI (or the URI read) or a template's
	// URI template; Provider the plugin that offers it.
	Kind, Name, Exposed, URI, Provider string
	// Definition is the item's definition (an MCP Tool, Prompt, Resource
	// or ResourceTemplate object); at OnDefinitions, the one to judge.
	Definition json.RawMessage
	// Arguments is the JSON object of arguments (calls and prompt gets),
	// as the hooks before this one left it.
	Arguments json.RawMessage
	// Result is the result as JSON (After* points).
	Result json.RawMessage
}

// HookDecision is what a hook decided.
type HookDecision int

// The decisions.
const (
	HookPass HookDecision = iota
	HookRefuse
	HookRewrite
	HookHide
)

// HookAnswer is a hook's answer; build it with Pass, Refuse, Rewrite or
// Hide.
type HookAnswer struct {
	Decision HookDecision
	// Reason: for Refuse, what the client sees; for Hide, what the
	// operator sees; for Rewrite, optional, for the audit log.
	Reason string
	// Rewritten is the new arguments, result or definition, whole.
	Rewritten json.RawMessage
}

// Pass lets the request (or definition) go on as it is.
func Pass() HookAnswer { return HookAnswer{Decision: HookPass} }

// Refuse stops the request; the client sees reason in an isError result
// that names the hook.
func Refuse(reason string) HookAnswer { return HookAnswer{Decision: HookRefuse, Reason: reason} }

// Rewrite goes on with v (the arguments, the result or the definition,
// whole) in place of what the hook was shown. v is marshalled as JSON
// unless it is a json.RawMessage or []byte already; the host checks the
// rewritten arguments against the tool's inputSchema and a rewritten
// result against its outputSchema.
func Rewrite(v any, reason string) HookAnswer {
	var raw json.RawMessage
	switch b := v.(type) {
	case json.RawMessage:
		raw = b
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(v); err != nil {
			panic("pluginproto: Rewrite: " + err.Error())
		}
	}
	return HookAnswer{Decision: HookRewrite, Reason: reason, Rewritten: raw}
}

// Hide keeps a definition from every client (OnDefinitions only); the
// operator sees reason in plughost plugins, as a held definition.
func Hide(reason string) HookAnswer { return HookAnswer{Decision: HookHide, Reason: reason} }

// HookFunc answers one question. An error means the hook could not
// decide: the host applies the hook's on_error ("refuse" or "pass") and
// logs the error. ctx ends when the host stops waiting (the hook's
// timeout).
type HookFunc func(ctx context.Context, q *HookRequest) (HookAnswer, error)

// AddHook registers h for the given points (at least one); the plugin
// then offers them (Offers.Hooks, which Offer does not change). A later
// AddHook for a point replaces the earlier one. Register hooks before
// Serve: the host learns the points once, when it starts the plugin.
// AddHook panics (a programming error) when h is nil, no point is given,
// or a point is none of the HookPoint constants.
//
// The host may ask many questions at once: h runs concurrently, each
// question on a goroutine of its own, at most maxHookQuestions at a time
// (a question over that is answered with an error, which the host handles
// under the hook's on_error). ctx ends when the host stops waiting. A
// panic in h is recovered and logged, and answers the question with an
// error, as a returned error does.
func (p *Plugin) AddHook(h HookFunc, points ...HookPoint) {
	if h == nil {
		panic("pluginproto: AddHook: nil HookFunc")
	}
	if len(points) == 0 {
		panic("pluginproto: AddHook: no hook point")
	}
	for _, pt := range points {
		if !slices.Contains(hookPoints, pt) {
			panic(fmt.Sprintf("pluginproto: AddHook: unknown hook point %q (want one of %v)", pt, hookPoints))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hooks == nil {
		p.hooks = make(map[HookPoint]HookFunc)
	}
	for _, pt := range points {
		p.hooks[pt] = h
	}
}

// hookPoints are the hook points, in the order of a request (Offers.Hooks
// lists them in this order).
var hookPoints = []HookPoint{BeforeCall, AfterCall, BeforeRead, AfterRead, BeforeGet, AfterGet, OnDefinitions}

// hookPointsLocked is the points the plugin serves, in order; nil when none.
func (p *Plugin) hookPointsLocked() []HookPoint {
	var out []HookPoint
	for _, pt := range hookPoints {
		if p.hooks[pt] != nil {
			out = append(out, pt)
		}
	}
	return out
}
