package mcp

import (
	"context"
	"encoding/json"

	"github.com/plughost/plughost/host/tool"
)

// A Catalog is what the server serves: the tools, resources, resource
// templates and prompts, already named as clients see them. host/catalog
// implements it. Implementations must be safe for concurrent use.
//
// A tool.Call, tool.Read or tool.PromptGet carries the client's declared
// capabilities (ClientCapabilities, {} when none). A call, ReadResource
// and GetPrompt may return an *tool.InputRequired: the server then asks
// its client and calls again with Input set (see the package doc).
type Catalog interface {
	// ListTools returns one page of MCP Tool objects (already JSON, names
	// final) and the cursor of the next page ("" at the end). An unknown
	// cursor returns an error wrapping tool.ErrInvalidCursor (→ -32602).
	// Each tool must be a valid JSON object: the server does not parse
	// them again (host/catalog compacts and checks every definition when
	// a provider publishes it). One that is not framed as an object is
	// dropped with an error log.
	ListTools(cursor string) (tools []json.RawMessage, nextCursor string, err error)
	// StartCall starts a tool's call and returns (tool.StartFunc);
	// call.Name is the exposed name. done is called exactly once, with the
	// call's result or error, possibly before StartCall returns; call's
	// Progress and Log are called before it, in order, on the same
	// goroutine as done. When ctx ends, done must come soon, with ctx's
	// error. done writes the response: it must not be called with a lock
	// held that the server's writes could wait for. Over stdio a call
	// starts on the goroutine that read it and is answered on the one
	// that learns its result (a plugin's stream reader), which saves two
	// goroutine hand-offs per call.
	//
	// errors.Is(err, tool.ErrUnknownTool) → JSON-RPC -32602; any other
	// error → an isError CallToolResult naming the cause (tool.ErrorResult).
	// A result must be a valid JSON object and is passed through as bytes,
	// unparsed (plugins' results are checked by pluginproto's Client,
	// devices' are built by host/device); one not framed as an object
	// becomes an isError result, and one with line breaks is compacted.
	StartCall(ctx context.Context, call *tool.Call, done func(json.RawMessage, error))
	// Subscribe calls fn after each (already coalesced) burst of changes
	// of the lists, saying which changed; cancel stops it. fn does not
	// block.
	Subscribe(fn func(tool.Change)) (cancel func())

	// ListResources, ListResourceTemplates and ListPrompts return one page
	// of MCP Resource, ResourceTemplate and Prompt objects (valid JSON
	// objects, names final), as ListTools does.
	ListResources(cursor string) (resources []json.RawMessage, nextCursor string, err error)
	ListResourceTemplates(cursor string) (templates []json.RawMessage, nextCursor string, err error)
	ListPrompts(cursor string) (prompts []json.RawMessage, nextCursor string, err error)
	// ReadResource reads a resource: its ReadResourceResult (a valid JSON
	// object), or an error wrapping tool.ErrUnknownResource (→ -32002), an
	// *tool.InputRequired, or any other failure (→ -32603 naming it).
	ReadResource(ctx context.Context, r *tool.Read) (json.RawMessage, error)
	// GetPrompt renders a prompt (g.Name is the exposed name): its
	// GetPromptResult, or an error wrapping tool.ErrUnknownPrompt or
	// tool.ErrBadArguments (→ -32602), an *tool.InputRequired, or any
	// other failure (→ -32603).
	GetPrompt(ctx context.Context, g *tool.PromptGet) (json.RawMessage, error)
	// Complete answers completion/complete (params as the client sent
	// them, exposed names in ref): its CompleteResult, or an error
	// wrapping tool.ErrUnknownPrompt, tool.ErrUnknownResource or
	// tool.ErrBadArguments (→ -32602), or any other failure (→ -32603).
	Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	// SubscribeResource registers one client's interest in updates of the
	// resource at uri; release ends it. The catalog tells the resource's
	// provider on the first interest and when the last is released. An
	// error wraps tool.ErrUnknownResource (no provider owns uri, → -32002)
	// or says why the provider refused.
	SubscribeResource(ctx context.Context, uri string) (release func(), err error)
	// OnResourceUpdated calls fn with the URI of each subscribed resource
	// whose contents changed; cancel stops it. fn does not block.
	OnResourceUpdated(fn func(uri string)) (cancel func())
}

// A ToolLookup is a Catalog that returns one tool's definition by its
// exposed name (host/catalog implements it).
type ToolLookup interface {
	// Tool returns the MCP Tool object of the tool exposed as name, or nil.
	Tool(name string) json.RawMessage
}
