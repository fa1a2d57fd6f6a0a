package tool

import (
	"context"
	"encoding/json"
)

// Guardrails: the operator's hooks (package hooks builds them from the
// configuration's hooks block; each hook is a plugin that offers hook
// points). The catalog asks them around every call, read and prompt get;
// the plugin manager asks them about every definition a plugin lists,
// before any client sees it.

// HookPoint is where in a request, or in a plugin's listing, a hook runs.
type HookPoint string

// The hook points.
const (
	BeforeCall    HookPoint = "before_call"    // sees the tool, its definition and the arguments
	AfterCall     HookPoint = "after_call"     // sees the same and the CallToolResult
	BeforeRead    HookPoint = "before_read"    // sees the resource's URI
	AfterRead     HookPoint = "after_read"     // sees the ReadResourceResult
	BeforeGet     HookPoint = "before_get"     // sees the prompt, its definition and the arguments
	AfterGet      HookPoint = "after_get"      // sees the same and the GetPromptResult
	OnDefinitions HookPoint = "on_definitions" // sees one definition as its plugin lists it
)

// HookPoints are every hook point, in the order of a request.
var HookPoints = []HookPoint{BeforeCall, AfterCall, BeforeRead, AfterRead, BeforeGet, AfterGet, OnDefinitions}

// HookCall is one question to the hooks of a point.
type HookCall struct {
	Point HookPoint
	// Hook is the operator's name for the hook asked (set by package
	// hooks for each hook it asks; "" when handed to Hooks.Apply).
	Hook string
	// Caller is who the request acts for; nil at OnDefinitions, and when
	// the host knows nobody.
	Caller *Caller
	// Item is what the question is about: its kind, own name, exposed
	// name, URI and provider (Item.Provider: the plugin or device that
	// offers it, whose own hooks never judge it).
	Item Item
	// Definition is the item's definition as JSON (the MCP Tool, Prompt,
	// Resource or ResourceTemplate object); nil for a read of a URI that
	// only a template serves.
	Definition json.RawMessage
	// Arguments is the JSON object of arguments (calls and prompt gets).
	Arguments json.RawMessage
	// Result is the provider's result as JSON (after_* points).
	Result json.RawMessage
	// Check, when not nil, checks a hook's rewrite before the next hook
	// or the request sees it: the catalog's check of arguments against
	// the tool's inputSchema (or a prompt's arguments), of a result
	// against its outputSchema (or a read's or get's result shape). It
	// returns "" when the rewrite holds, else what it breaks; Apply then
	// refuses, naming the hook. It is the host's, never sent to a hook.
	Check func(rewritten json.RawMessage) string
}

// HookDecision is what a hook answered.
type HookDecision string

// The decisions.
const (
	HookPass    HookDecision = "pass"
	HookRefuse  HookDecision = "refuse"
	HookRewrite HookDecision = "rewrite"
	HookHide    HookDecision = "hide" // on_definitions only
)

// HookAnswer is one hook's answer to a HookCall.
type HookAnswer struct {
	Decision HookDecision
	// Reason says why (refuse, hide; optional for rewrite).
	Reason string
	// Rewritten is the new arguments, result or definition, whole (rewrite).
	Rewritten json.RawMessage
}

// Hooks are the operator's hooks, as the catalog and the plugin manager
// use them. Implementations are safe for concurrent use.
type Hooks interface {
	// Has reports whether any hook may run at point: when it reports
	// false, callers skip building a HookCall.
	Has(point HookPoint) bool
	// Apply asks, in the configured order, every hook of q.Point whose
	// match selects q (never one served by q.Item.Provider itself), each
	// seeing what the one before left. It returns what to go on with:
	// the arguments (before_call, before_get), the result (after_*) or
	// the definition (on_definitions), as the last rewrite left it (q's
	// own when none rewrote it). A refusal, a hide, or a hook that failed
	// under on_error = "refuse" is an error wrapping ErrRefused whose text
	// names the hook and its reason.
	Apply(ctx context.Context, q *HookCall) (json.RawMessage, error)
}

// HookAsker reaches the plugin that serves a hook (the plugin manager,
// through the plugin's Hooks stream).
type HookAsker interface {
	// AskHook asks the plugin named plugin one question, q.Hook set, and
	// returns its answer, or an error when it could not answer (not
	// running and cannot start, does not offer q.Point, its stream broke,
	// ctx ended).
	AskHook(ctx context.Context, plugin string, q *HookCall) (*HookAnswer, error)
}
