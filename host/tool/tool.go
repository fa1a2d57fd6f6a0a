// Package tool is the vocabulary shared by everything that offers MCP tools
// (a plugin, a device connection), the catalog that aggregates them and the
// protocol layer that serves them.
//
// MCP shapes stay JSON here: a tool definition is the MCP Tool object as the
// provider wrote it, a result is the MCP CallToolResult object. The host passes
// them through as bytes, so a field the specification adds tomorrow reaches the
// client untouched.
package tool

import (
	"context"
	"encoding/json"
	"errors"
)

// ErrUnknownTool is returned (wrapped) by CallTool when no provider offers the
// named tool. The protocol layer answers it with JSON-RPC error -32602.
var ErrUnknownTool = errors.New("unknown tool")

// ErrInvalidCursor is returned (wrapped) when a tools/list cursor was not
// issued by this host. The protocol layer answers it with -32602.
var ErrInvalidCursor = errors.New("invalid cursor")

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
	// Arguments is the JSON object of arguments; never nil (at least "{}").
	Arguments json.RawMessage
	// Progress, when not nil, delivers progress notifications to the client.
	// It is nil when the client did not ask for progress (no progressToken).
	Progress func(Progress)
	// Log, when not nil, delivers log messages to the client (the protocol
	// layer filters them by the session's logging level).
	Log func(Log)
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
	// A failure of the tool itself is a result with isError: true; an error
	// return means the call could not be carried out (the provider died,
	// the context ended) and becomes an isError result naming the cause.
	CallTool(ctx context.Context, call *Call) (json.RawMessage, error)
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
