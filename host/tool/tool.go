// Package tool is the vocabulary shared by everything that offers MCP tools
// (a plugin, a device connection), the catalog that aggregates them and the
// protocol layer that serves them.
//
// MCP shapes stay JSON here: a tool definition is the MCP Tool object as the
// provider wrote it, a result is the MCP CallToolResult object. The host passes
// them through as bytes, so a field the specification adds tomorrow reaches the
// client untouched.
//
// # Per-call policy
//
// Each rule a call meets is decided in one place:
//
//   - the shape of a request (params, "arguments" an object or absent,
//     progressToken) and the size of a message: the protocol layer and its
//     transports (host/mcp);
//   - the default for absent arguments ({} for absent or null) and the
//     check of the arguments against the tool's inputSchema: the catalog
//     (Catalog.CallTool, with package argcheck), for every call from a
//     client. After the catalog, Call.Arguments is never empty. (A device's
//     own text tasks call its tools without a client or the catalog; the
//     device bridge applies the same default and argcheck there.)
//   - names (valid, derived, clashing): package naming, when a provider is
//     published;
//   - a call's time limit: the provider that knows it (a plugin's sandbox
//     policy "timeout", the device bridge's CallTimeout), which returns
//     ErrTimedOut;
//   - what a failure becomes for the client: Outcome.
package tool

import (
	"context"
	"encoding/json"
)

// Def is one tool as its provider defines it.
type Def struct {
	// Name is the provider's own name for the tool.
	Name string
	// JSON is the MCP Tool object (name, title, description, inputSchema,
	// outputSchema, annotations, _meta, ...). Its "name" is the provider's
	// name; the catalog rewrites it to the name exposed to clients.
	JSON json.RawMessage
}

// Call is one tools/call on its way to a provider.
type Call struct {
	// Name is the tool's name: the exposed name when given to the catalog,
	// the provider's own name when the catalog hands the call on.
	Name string
	// Arguments is the JSON object of arguments. The protocol layer passes
	// what the client sent (nil when absent); the catalog replaces absent
	// or null arguments with {} and checks them against the tool's
	// inputSchema, so a provider always gets a JSON object: never nil,
	// never empty.
	Arguments json.RawMessage
	// Progress, when not nil, delivers progress notifications to the client.
	// It is nil when the client did not ask for progress (no progressToken).
	Progress func(Progress)
	// Log, when not nil, delivers log messages to the client (the protocol
	// layer filters them by the session's logging level).
	Log func(Log)
	// ClientCapabilities is the client's capabilities object as JSON ({}
	// or nil when it declared none), so the provider knows what it may ask
	// of the client.
	ClientCapabilities json.RawMessage
	// Input is set on the retry of a call that answered InputRequired.
	Input *Input
	// TraceParent and TraceState are the call's W3C trace context, from
	// the _meta of the client's request, checked by the protocol layer
	// (package trace); "" when none. A provider hands them on (a plugin in
	// its CallStart, a wrapped server in its request's _meta) and names
	// the trace id in its logs about the call.
	TraceParent, TraceState string
	// Provider and Routed are set by the catalog once it has routed the
	// call: the name of the provider that serves it and the exposed name
	// of the tool it runs, for the caller's metrics and audit log. Routed
	// is Name, but for a call the host forwards under another name (tool
	// search's call_tool, which names the host itself as Provider for its
	// own search_tools). Both "" when the call was refused before (an
	// unknown tool).
	Provider, Routed string
	// Tasks is set when the client accepts a task for this call (MCP
	// 2026-07-28's tasks extension): the provider may go on with the call
	// as a task, and says so through Detach. The catalog clears it for a
	// tool whose definition does not declare execution.taskSupport
	// "optional" or "required", and refuses a call of a "required" tool
	// without it (a CapabilityRequired naming the extension).
	Tasks bool
	// Detach, set with Tasks, is called by the provider (at most once, on
	// any goroutine, before the call returns) when the call goes on as a
	// task: the protocol layer answers the client with the task at once,
	// and the call's outcome ends the task instead. (The protocol layer may
	// also make a call a task by itself, or fail to make one.)
	Detach func()
	// BecameTask, set with Tasks, lets the provider learn when the call has
	// become a task, whoever decided it: it registers f, which runs once
	// the task exists (at once if it does already), on any goroutine, and
	// never when the call stays synchronous. A plugin's call timeout is
	// lifted so: a task's lifetime bounds it instead.
	BecameTask func(f func())
	// Caller is who the call acts for (the protocol layer's session);
	// nil when unknown. A provider may hand it on (a plugin gets it in its
	// CallStart).
	Caller *Caller
	// Guard, when not nil, is what the caller may use: the catalog answers
	// a call of a tool the guard hides as of an unknown one, and refuses a
	// call whose arguments it refuses (tool.ErrRefused).
	Guard Guard
}

// Progress is one progress update of a running call.
type Progress struct {
	Progress float64
	// Total is 0 when unknown.
	Total   float64
	Message string
}

// Log is one log message from a provider (MCP notifications/message).
type Log struct {
	// Level is an MCP logging level: debug, info, notice, warning, error,
	// critical, alert, emergency.
	Level string
	// Logger names the source; empty means the provider.
	Logger string
	// Data is any JSON value.
	Data json.RawMessage
}

// Provider offers tools. Implementations must be safe for concurrent use.
type Provider interface {
	// Name identifies the provider (a plugin's file name, a device's id).
	// It matches ^[a-zA-Z0-9_-]+$.
	Name() string
	// Tools returns the provider's current tool definitions.
	Tools() []Def
	// CallTool runs a tool and returns its MCP CallToolResult as JSON.
	// A failure of the tool itself is a result with isError: true. An
	// error return means the call could not be carried out: it wraps
	// ErrGone, ErrTimedOut, ErrRefused, ErrBadArguments, ErrTooLarge or ErrInternal
	// (made with Errorf, naming the cause, tool and provider), or is any
	// other error, which the catalog wraps naming tool and provider, or
	// the context's error. Outcome turns it into what the client gets.
	CallTool(ctx context.Context, call *Call) (json.RawMessage, error)
}

// A Starter is a Provider that can also start a call without a goroutine
// waiting for it (a plugin, whose stream reader delivers the answer; a
// device). Its StartCall is its one call path, and its CallTool is
// StartCall waited for (Await).
type Starter interface {
	Provider
	// StartCall is CallTool without waiting: done gets what CallTool
	// would have returned, exactly once, possibly before StartCall
	// returns. call's Progress and Log, then done, run on a goroutine of
	// the provider's and must not block for long; when ctx ends first,
	// done comes soon, and a notification already on its way may still
	// follow it. call must stay untouched until done.
	StartCall(ctx context.Context, call *Call, done func(json.RawMessage, error))
}

// A StartFunc starts a call and returns; done gets the call's answer,
// exactly once (a Starter's StartCall, or the catalog's).
type StartFunc func(ctx context.Context, call *Call, done func(json.RawMessage, error))

// Await is the synchronous form of a StartFunc: it starts call and waits
// for its answer. A layer keeps one asynchronous call path, StartCall, and
// Await gives its CallTool to the callers that need to wait (a
// tool.Provider's CallTool, `plughost call`).
func Await(ctx context.Context, start StartFunc, call *Call) (json.RawMessage, error) {
	type answer struct {
		res json.RawMessage
		err error
	}
	ch := make(chan answer, 1)
	start(ctx, call, func(res json.RawMessage, err error) { ch <- answer{res, err} })
	a := <-ch
	return a.res, a.err
}

// ErrorResult returns an MCP CallToolResult with isError: true and msg as its
// only text content.
func ErrorResult(msg string) json.RawMessage {
	return textResult(msg, true)
}

// TextResult returns an MCP CallToolResult with msg as its only text content.
func TextResult(msg string) json.RawMessage {
	return textResult(msg, false)
}

func textResult(msg string, isError bool) json.RawMessage {
	type content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	b, err := json.Marshal(struct {
		Content []content `json:"content"`
		IsError bool      `json:"isError,omitempty"`
	}{[]content{{"text", msg}}, isError})
	if err != nil {
		panic(err) // cannot happen: strings always marshal
	}
	return b
}
