package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The rest of what an MCP server offers, beside tools: resources, resource
// templates, prompts and completion, and a provider's need for the
// client's input (sampling, elicitation, roots). As with tools, every MCP
// object stays JSON.

// ErrUnknownResource is returned (wrapped) when no provider offers the
// resource a client named. The protocol layer answers -32002.
var ErrUnknownResource = errors.New("unknown resource")

// ErrUnknownPrompt is returned (wrapped) when no provider offers the prompt
// a client named (or a completion's reference names none). The protocol
// layer answers -32602.
var ErrUnknownPrompt = errors.New("unknown prompt")

// Offers says what a Server offers besides tools.
type Offers struct {
	// Resources: Resources, Templates and ReadResource.
	Resources bool
	// Subscriptions: SubscribeResource, and updates of subscribed
	// resources.
	Subscriptions bool
	// Prompts: Prompts and GetPrompt.
	Prompts bool
	// Completions: Complete.
	Completions bool
}

// Change says which of the lists changed in one burst of changes.
type Change struct {
	Tools, Resources, Prompts bool
}

// Resource is one resource as its provider defines it.
type Resource struct {
	// URI identifies the resource. URIs are never renamed.
	URI string
	// JSON is the MCP Resource object (uri, name, title, description,
	// mimeType, size, annotations, icons, _meta).
	JSON json.RawMessage
}

// Template is one resource template as its provider defines it.
type Template struct {
	// URITemplate is its RFC 6570 URI template.
	URITemplate string
	// JSON is the MCP ResourceTemplate object.
	JSON json.RawMessage
}

// Prompt is one prompt as its provider defines it.
type Prompt struct {
	// Name is the provider's own name for the prompt; the catalog may
	// expose it under another (the tools' clash rule).
	Name string
	// JSON is the MCP Prompt object (name, title, description, arguments,
	// icons, _meta). Its "name" is the provider's name.
	JSON json.RawMessage
}

// Input is the client's answers to a provider's InputRequired, carried by
// the call (or read, or prompt get) that retries it.
type Input struct {
	// Responses is a JSON object: key → the client's result for that
	// request. Nil when there are none.
	Responses json.RawMessage
	// Errors are the keys the client could not answer, and why.
	Errors map[string]InputError
	// State is the InputRequired's State, as the provider returned it.
	State string
	// Provider is the InputRequired's Provider: the retry must reach the
	// same provider, or it is refused (the client's answers and the state
	// are that provider's, never another's).
	Provider string
}

// InputError is why one input request got no result: the client answered
// it with a JSON-RPC error, or the host did not ask because the client did
// not declare the capability (CodeNotSupported).
type InputError struct {
	Code    int
	Message string
}

// CodeNotSupported is the InputError code of a request the client was not
// asked because it did not declare the capability (JSON-RPC's method not
// found: the client does not serve that method).
const CodeNotSupported = -32601

// InputRequired is a provider's answer when it needs the client's input
// before it can answer: it is returned as the error of CallTool,
// ReadResource or GetPrompt, and passes the catalog, which names the
// provider in it (Provider, on a copy). The protocol layer gets the
// answers from the client and retries the same request with Input set
// (a 2025-11-25 session), or hands it to the client as an
// InputRequiredResult (MCP 2026-07-28).
type InputRequired struct {
	// Requests is a JSON object: key → an MCP request object
	// ({"method": ..., "params": {...}}) of sampling/createMessage,
	// elicitation/create or roots/list.
	Requests json.RawMessage
	// State is opaque to the host; it comes back in Input.State.
	State string
	// Timeout is the time limit of the call that asked (the provider's;
	// 0 when it has none): each request to the client waits at most that
	// long, as the call itself would have.
	Timeout time.Duration
	// Provider names the provider that asked; the catalog sets it, and
	// the protocol layer hands it back in Input.Provider.
	Provider string
}

// An Instance is a Provider that can say which running instance it
// publishes. A provider is published again whenever one of its lists
// changes; publications with the same Instance are one running process
// (a plugin's), so the catalog keeps what it told that process (resource
// subscriptions) instead of telling it again.
type Instance interface {
	Instance() any
}

// A Describer is a Provider that says what it is as a whole, as an MCP
// server's serverInfo does with its title and description: the host's
// tool search scores it with all the provider's tools, so a query about
// what the provider is for finds them even when no tool repeats its
// words. A provider is published again when its About changes.
type Describer interface {
	About() About
}

// Withholder is an optional interface of a Provider that lists less than
// it has: a plugin whose new tools wait for the operator's approval (trust
// mode pinned or signed). A call of a name no provider lists is an
// unknown tool (-32602) unless a Withholder says why it withholds it:
// then the call gets that reason as an isError result.
type Withholder interface {
	// WithheldTool returns why the provider withholds its tool of that
	// name (its own name, as the provider knows it); "" when it does not.
	WithheldTool(name string) string
}

// About is a provider's title and description.
type About struct {
	// Title is a short display name ("Yahoo Finance").
	Title string
	// Description says what the provider's tools are for.
	Description string
}

func (e *InputRequired) Error() string {
	return fmt.Sprintf("the provider needs the client's input first (%d bytes of requests)", len(e.Requests))
}

// Read is one resources/read on its way to a provider.
type Read struct {
	URI string
	// ClientCapabilities is the client's capabilities object ({} when
	// none), so the provider knows what it may ask.
	ClientCapabilities json.RawMessage
	// Input is set on the retry of a read that answered InputRequired.
	Input *Input
	// Caller and Guard are as a Call's.
	Caller *Caller
	Guard  Guard
}

// PromptGet is one prompts/get on its way to a provider.
type PromptGet struct {
	// Name is the exposed name when given to the catalog, the provider's
	// own name when the catalog hands it on.
	Name string
	// Arguments is a JSON object of string values; never empty once past
	// the catalog ({} when the client sent none).
	Arguments          json.RawMessage
	ClientCapabilities json.RawMessage
	Input              *Input
	// Caller and Guard are as a Call's.
	Caller *Caller
	Guard  Guard
}

// A Server is a Provider that may offer more than tools (a plugin of
// contract 2). The catalog asks Offers and calls only what is offered.
// The lists are read when the provider is published (Set) and must not
// change until it is published again.
type Server interface {
	Provider
	Offers() Offers
	Resources() []Resource
	Templates() []Template
	Prompts() []Prompt
	// ReadResource returns the MCP ReadResourceResult as JSON, or an
	// error: one wrapping ErrUnknownResource when the provider has no such
	// resource, an *InputRequired, or a failure as for CallTool.
	ReadResource(ctx context.Context, r *Read) (json.RawMessage, error)
	// GetPrompt returns the MCP GetPromptResult as JSON, or an error: one
	// wrapping ErrUnknownPrompt, ErrBadArguments (a message naming the
	// problem), an *InputRequired, or a failure as for CallTool.
	GetPrompt(ctx context.Context, g *PromptGet) (json.RawMessage, error)
	// Complete answers completion/complete; params are the MCP
	// CompleteRequest params with the provider's own names in ref. It
	// returns the CompleteResult as JSON.
	Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	// SubscribeResource starts (or, with subscribe false, ends) the
	// provider's reports of changes to the resource at uri.
	SubscribeResource(ctx context.Context, uri string, subscribe bool) error
}
