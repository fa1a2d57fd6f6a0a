package tool

import "encoding/json"

// Caller is who a request acts for, as far as the host verified it: on
// Streamable HTTP with OAuth the access token's subject, client and claims,
// on stdio the local user. It never holds the token itself. The protocol
// layer sets it on each call, read and prompt get; a plugin learns it
// through its contract.
type Caller struct {
	// Subject is the access token's "sub" (its issuer's name for the
	// user or service; its client id when the token has none), or the
	// local user's name on stdio; "" when the host verified nobody (no
	// OAuth).
	Subject string
	// ClientID is the OAuth client the token was issued to ("client_id",
	// else "azp"); "" on stdio.
	ClientID string
	// Issuer is the token's issuer; "" on stdio.
	Issuer string
	// Scopes are the scopes the token grants.
	Scopes []string
	// Claims are the token's claims, as JSON values (strings, numbers,
	// booleans, []any, map[string]any); nil on stdio and without OAuth.
	// Access rules see them all; a plugin only those the configuration
	// passes on.
	Claims map[string]any
	// Local is true on stdio: the caller is the user running the host.
	Local bool
}

// ItemKind is what an Item is.
type ItemKind string

// The kinds of Item.
const (
	ItemTool     ItemKind = "tool"
	ItemPrompt   ItemKind = "prompt"
	ItemResource ItemKind = "resource"
	ItemTemplate ItemKind = "resource_template"
)

// Item is one tool, prompt, resource or resource template as a Guard sees
// it.
type Item struct {
	Kind ItemKind
	// Name is a tool's or prompt's own name (its provider's name for it,
	// whatever it is exposed as), or a resource's or template's "name".
	Name string
	// Exposed is the name clients see and call a tool or prompt by: Name,
	// or another when Name clashes with another provider's or cannot be
	// served as it is (package naming); "" for resources and templates.
	Exposed string
	// URI is a resource's URI (for a read, the URI read) or a template's
	// URI template; "" for tools and prompts.
	URI string
	// Provider is the name of the provider (plugin, device) that offers it.
	Provider string
	// Annotations is a tool's or resource's "annotations" object, parsed;
	// nil when it has none.
	Annotations map[string]any
}

// A Guard decides what one caller may see and use (package access builds
// them from the configuration's rules). The catalog asks it when it lists,
// and before it routes a call, read or prompt get. It is safe for
// concurrent use.
type Guard interface {
	// Key identifies the guard's decisions: two guards with the same key
	// decide every question alike, so what one decided may serve the
	// other.
	Key() string
	// Visible reports whether it may be listed: whether some arguments
	// could be allowed. A caller is never told of an item it cannot
	// see: using one is answered as if it did not exist.
	Visible(it *Item) bool
	// Allow decides one use of a visible item with these arguments (a
	// call's or a prompt get's JSON object; nil for a read): nil, or an
	// error wrapping ErrRefused that names the caller, the item and the
	// rule that refused.
	Allow(it *Item, args json.RawMessage) error
}
