package pluginhost

import (
	"context"
	"encoding/json"
)

// A Proxy serves the contract on behalf of another MCP server: an adapter
// (plughost's own wrapper of stdio and remote MCP servers is one) whose
// definitions and answers are that server's MCP JSON, passed through.
// A plugin with a Proxy (Plugin.SetProxy) serves the lists given to
// Plugin.SetProxyLists and hands every call, read, prompt, completion and
// subscription to the Proxy; nothing added with AddTool, AddResource, ...
// is served. The SDK's own checks of arguments and results do not apply:
// the host's do.
//
// Requests to the client are the Proxy's to manage, in the contract's
// rounds: a method may return an *InputRequiredError (its requests, and a
// state of the Proxy's own), and the host retries the same request with
// the client's answers and that state (ProxyCall.Input, the in argument).
type Proxy interface {
	// CallTool runs one tools/call and returns the MCP CallToolResult. An
	// error other than an *InputRequiredError is answered as an isError
	// result carrying its text.
	CallTool(ctx context.Context, call *ProxyCall) (json.RawMessage, error)
	// ReadResource returns the MCP ReadResourceResult of uri, an error
	// wrapping ErrUnknownResource, an *InputRequiredError, or another
	// error (its text reaches the client).
	ReadResource(ctx context.Context, uri string, caps json.RawMessage, in *Input) (json.RawMessage, error)
	// GetPrompt returns the MCP GetPromptResult, or an error as
	// ReadResource does (ErrUnknownPrompt, ErrInvalidArguments, ...).
	GetPrompt(ctx context.Context, name string, args, caps json.RawMessage, in *Input) (json.RawMessage, error)
	// Complete answers completion/complete: params are the MCP
	// CompleteRequest params, the result the CompleteResult.
	Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	// SubscribeResource starts (subscribe) or ends the server's reports of
	// changes to uri; they reach the host through Plugin.ResourceUpdated.
	// An unknown uri is an error wrapping ErrUnknownResource.
	SubscribeResource(ctx context.Context, uri string, subscribe bool) error
}

// ProxyCall is one tools/call handed to a Proxy.
type ProxyCall struct {
	Tool      string
	Arguments json.RawMessage
	// ClientCapabilities is the client's capabilities object (nil: none).
	ClientCapabilities json.RawMessage
	// Input is set on the retry of a call that answered an
	// *InputRequiredError.
	Input *Input
	// TraceParent and TraceState are the call's W3C trace context (see
	// Request.TraceParent); "" for none. A proxy hands them on to the
	// server it proxies (in the _meta of its request).
	TraceParent, TraceState string
	// Progress reports progress to the client; nil when the client did not
	// ask for progress. Log sends a log message (an MCP level and any JSON
	// value) to the client. Both do nothing once CallTool has returned.
	Progress func(progress, total float64, message string)
	Log      func(level string, data json.RawMessage)
}

// ProxyLists is what a proxied server offers: its MCP Tool, Resource,
// ResourceTemplate and Prompt objects.
type ProxyLists struct {
	Tools, Resources, Templates, Prompts [][]byte
}
