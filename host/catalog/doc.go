// Package catalog aggregates what many providers (plugins, device
// connections) offer, tools, resources, resource templates and prompts,
// into the lists one MCP server serves, and routes each request back to
// the provider that offers what it names.
//
// # Publishing and serving
//
// The plugin manager publishes; the protocol layer serves:
//
//	cat := catalog.New(nil) // defaults: 100 items a page, events coalesced over 50ms
//	defer cat.Close()
//
//	cat.Set(weather)      // a tool.Provider named "weather": reads weather.Tools() now
//	cat.Set(files)        // a tool.Server: also its Offers(), then Resources(), Templates(), Prompts()
//	cat.Remove("weather") // everything it offered is gone
//
//	page, next, err := cat.ListTools("")                // tools/list; ListResources, ListResourceTemplates, ListPrompts alike
//	res, err := cat.CallTool(ctx, &tool.Call{...})      // tools/call, by exposed name
//	res, err = cat.ReadResource(ctx, &tool.Read{...})   // resources/read, by URI
//	res, err = cat.GetPrompt(ctx, &tool.PromptGet{...}) // prompts/get, by exposed name
//	res, err = cat.Complete(ctx, params)                // completion/complete
//	release, err := cat.SubscribeResource(ctx, uri)     // resources/subscribe; release() at unsubscribe
//
//	cancel := cat.Subscribe(func(ch tool.Change) { /* a list_changed for each list ch names */ })
//	stop := cat.FollowTools(func(ps []catalog.ProviderTools) { /* index.Set, or Remove when nil */ })
//	cancel = cat.OnResourceUpdated(func(uri string) { /* notifications/resources/updated */ })
//	cat.ResourceUpdated("files", uri) // the manager, when a plugin reports a change
//
// The listings and the routes read an immutable snapshot through an atomic
// pointer and take no lock, so a slow provider never holds up a listing,
// another request, or a Set. Set and Remove build the next snapshot: they
// check every definition, compile each tool's input schema (a schema text
// compiled before is not compiled again: [argcheck.Compile]), name tools
// and prompts and encode their JSON once per exposed name, so listing is
// a slice of pre-encoded objects.
//
// A provider that is a tool.Server says what it offers besides tools
// (tool.Offers); Set reads, and the catalog later calls, only what is
// offered: Resources and Templates (and ReadResource) with Offers.Resources,
// Prompts (and GetPrompt) with Offers.Prompts, Complete with
// Offers.Completions, SubscribeResource with Offers.Subscriptions. A
// plain tool.Provider offers tools alone.
//
// # Definitions
//
// Every definition is checked when its provider is published. One that
// fails is skipped with a warning naming provider, kind, name and reason,
// and listed by Skipped (and by `plughost plugins`): never silently
// dropped. A definition must be valid JSON, an object, with no member
// twice, and:
//
//   - a tool: a name of 1 to 128 of [A-Za-z0-9_.-] ([naming.CheckName]),
//     an "inputSchema" object that compiles, if present an
//     "outputSchema" object that compiles (see Validation of tool
//     arguments and results), and if present an "execution" object whose
//     "taskSupport", if present, is "forbidden", "optional" or "required"
//     ([argcheck.CheckTool] is the check, shared with the SDK's test
//     helper, pluginproto/plugintest);
//   - a resource: a string "uri" that is an absolute URI (one with a
//     scheme, as net/url parses it) and equals tool.Resource.URI when that
//     is set, and a string "name";
//   - a resource template: a string "uriTemplate" that parses as an RFC
//     6570 URI template (github.com/yosida95/uritemplate/v3) and equals
//     tool.Template.URITemplate when that is set, and a string "name";
//   - a prompt: a name as a tool's ([naming.CheckName] with
//     [naming.Prompt]), and "arguments", if present, an array of objects,
//     each with a distinct, non-empty string "name" and, if present, a
//     boolean "required".
//
// A provider that offers one tool name, URI, URI template or prompt name
// twice keeps the first. A tool whose inputSchema or outputSchema does not
// compile is skipped too: a tool whose arguments or results could never be
// checked is worse than a missing tool with a clear log line.
//
// Provider names must be valid ([naming.ValidProvider]: 1 to 32 of
// [a-zA-Z0-9_-]). The plugin manager and the device bridge derive valid
// ones ([naming.ForFile], [naming.ForDevice]), so Set refuses (logs and
// ignores) only a provider built wrongly.
//
// Served objects are the providers' JSON, compacted: member order and
// fields the host does not know pass through. Tools and prompts have
// "name" rewritten to the exposed name (added when absent); resources and
// templates are never renamed.
//
// # Names of tools and prompts
//
// A tool keeps the name its provider gives it. When two or more providers
// published together (one SetAll, or while the catalog is held) offer the
// same name, every one of them is exposed as <provider>__<tool>. Names are
// sticky: a name once exposed stays with its provider while the provider
// offers it, so a provider that comes later with the same name is the one
// exposed as <provider>__<tool>, and a name clients call never moves to
// another provider. A name starting with another provider's "<p>__" is
// exposed under its own provider's prefix. Each rename is logged, one line
// per provider per change, and subscribers are told, since the list
// changed. Access rules see the provider's own name (tool.Item.Name) and
// the exposed one (Exposed) apart, so a rename never changes what a rule
// matches.
//
// Exposed names always match ^[a-zA-Z0-9_-]{1,64}$, which is stricter than
// MCP's [A-Za-z0-9_.-]{1,128} (Claude Desktop refuses the rest). So '.'
// becomes '_', and a name that is then too long, or that now collides with
// another one, is cut and given a stable hash of its provider and tool:
// "a.very.long.name…" becomes "a_very_long_name…_1f2e3d4c". A name is never
// silently dropped: every rename is logged, and the names of the providers
// published together depend only on which providers offer which tools,
// never on their order. The rules themselves live in package naming
// ([naming.Assign]); the catalog applies them on every Set and Remove.
//
// Prompts follow the same rules in a namespace of their own: a prompt and
// a tool of the same name never clash, two providers' prompts "greet"
// become "a__greet" and "b__greet". GetPrompt maps the exposed name back
// to the provider's own.
//
// # Resource URIs
//
// A URI is never renamed: it is the resource's identity, and results and
// other resources link to it. When two providers offer the same URI, the
// provider whose name sorts first (byte-wise) owns it ([naming.Claim]):
// its resource is listed and read; the others' are hidden, listed by
// Skipped with a reason that names the owner, and a warning names the URI,
// the providers and the owner, once per change of the clash (a note
// follows when it is resolved). An operator can tell the winner from the
// names alone, and it never depends on the order of Set calls.
//
// # Resource templates and reads
//
// Every template is listed, none hidden or renamed. ReadResource routes
// by exact URI first: the owner of the listed resource of that URI. Any
// other URI goes to the first template that matches it, in routing order:
// by provider name, then in the provider's own order (the order of its
// Templates()). When templates of two providers match one URI, a warning
// names the URI, the template that serves it and the other one, once per
// pair of templates (again after either is withdrawn and comes back); a
// provider's own overlapping templates are its business. A URI that
// nothing serves is an error wrapping tool.ErrUnknownResource.
//
// A provider answers for its own resources only: its ReadResourceResult
// must be a "contents" array of objects, each with a string "uri", none
// of them a URI that another provider serves when the answer arrives (as
// a read of that URI would be routed: another's listed resource, or a URI
// another's template serves first). Otherwise the read fails with an
// error naming the provider and, for another's URI, its owner.
//
// # Lists and pagination
//
// Lists are sorted, so their order is deterministic: tools and prompts by
// exposed name, resources by URI, templates by URI template, then provider
// name. Pages hold Options.PageSize items. A cursor is the opaque encoding
// of the last key returned, so it survives changes between pages: the next
// page starts after that key, whatever came or went. Each list has cursors
// of its own: a cursor the catalog did not issue for that list is an error
// wrapping tool.ErrInvalidCursor.
//
// # Validation of tool arguments and results
//
// Input and output schemas are compiled with github.com/santhosh-tekuri/jsonschema/v6,
// draft 2020-12 unless "$schema" names another draft. Schemas must be
// self-contained: a reference to any other document, network or file, is
// refused, so such a schema does not compile. Patterns use Go's regexp
// syntax (RE2: no lookaround).
//
// Absent arguments (nil, blank, or JSON null) are {}: CallTool is the one
// place after the protocol layer that applies this default, so providers
// always get an object. Invalid arguments are a tool execution error, not a
// protocol error (MCP SEP-1303): CallTool returns an error wrapping
// tool.ErrBadArguments whose text names each violation by JSON pointer and
// rule, which tool.Outcome turns into an isError result so the model can
// correct itself, e.g.
//
//	invalid arguments for tool "create_file":
//	- /filename: missing required property
//	- /format: value must be one of "simple", "detailed"
//
// A tool's results are checked against its outputSchema, when it has one:
// MCP requires such a tool to return structuredContent that conforms to
// it, and strict clients (the TypeScript SDK's) reject a result that does
// not. A result with "isError": true is exempt (a failure carries no
// structured output); any other without structuredContent, or with
// structuredContent that breaks the schema, is replaced by an isError
// result naming each violation, in argcheck's words, and logged at WARN
// (provider, tool, the message) for the tool's author:
//
//	tool "convert" returned a result that breaks its outputSchema: structuredContent/count: must be integer, got string
//	tool "convert" returned no structuredContent, but its outputSchema requires structured results
//
// Results of tools without an outputSchema pass untouched and unparsed.
//
// # Tasks
//
// A call whose client accepts a task (tool.Call.Tasks: MCP 2026-07-28's
// tasks extension) keeps the offer only for a tool whose definition
// declares execution.taskSupport "optional" or "required"; for any other
// tool CallTool clears Tasks, so a provider never goes on as a task with a
// tool that did not say it might. A tool that declares "required" runs
// only as a task: a call without the offer is refused before the
// provider runs, with a *tool.CapabilityRequired naming the extension
// ({"extensions":{"io.modelcontextprotocol/tasks":{}}}), which the
// protocol layer answers with -32021 (an isError result in a session).
//
// # Prompt arguments
//
// GetPrompt gives absent arguments the same default, {}, and checks them
// against the prompt's definition before the provider sees them: they must
// be an object whose values are strings, holding every argument declared
// "required". Otherwise the error wraps tool.ErrBadArguments and names
// every problem, in argcheck's words:
//
//	invalid arguments for prompt "greet":
//	- /style: must be a string, got number
//	- /who: missing required argument
//
// Arguments the prompt does not declare pass: the provider decides.
//
// # Completion
//
// Complete checks the shape of the request (a "ref" of type "ref/prompt"
// with a "name", or "ref/resource" with a "uri"; an "argument" with string
// "name" and "value"; "context", if present, an object whose "arguments"
// are strings) and that the argument exists: one the prompt declares, or
// a variable of the template. A prompt's reference is rewritten to the
// provider's own name; a resource reference goes to the provider of the
// first template (in routing order) whose URI template is exactly the
// reference's. MCP allows "the URI or URI template of the resource", but
// only a template has variables: the URI of a resource (listed, or one a
// template matches) is invalid params (tool.ErrBadArguments) saying it
// has none, and no provider is asked. Everything else in the request
// passes through. A provider that does not offer completions is not
// asked: the answer is {"completion":{"values":[]}} ("nothing to
// suggest"), not an error, since the client asked about something
// listed.
//
// A provider that does not know the reference may say so with either
// tool.ErrUnknownPrompt or tool.ErrUnknownResource (a plugin's "unknown
// reference" arrives as ErrUnknownPrompt, whatever the reference): the
// error Complete returns wraps the reference's kind, ErrUnknownPrompt for
// a ref/prompt and ErrUnknownResource for a ref/resource, and not the
// other.
//
// # Subscriptions
//
// SubscribeResource counts interest per URI across every caller (the
// protocol layer's sessions): the provider that serves the URI hears
// SubscribeResource(ctx, uri, true) on the first interest and (…, false)
// after the last release, never one call per client. A subscription
// returns once the provider agreed; release is idempotent and does not
// wait (the provider is told within 10 seconds, on a goroutine of the
// catalog's). A provider that does not offer subscriptions is not called
// and the subscription succeeds: the subscribe capability is the
// server's, a client may subscribe to anything listed, and such a
// resource simply never reports a change. At most Options.MaxSubscriptions
// distinct URIs (100000, about 300 bytes and the URI each) are subscribed
// at once, by all callers together; beyond, the error wraps
// tool.ErrRefused and names the limit. The limit is the whole server's,
// above each session's own (host/mcp's, 1000): at the defaults, 100
// sessions each at its limit with URIs no one else subscribes fill it.
//
// A provider is published again whenever one of its lists changes (the
// plugin manager publishes a new provider value each time). Publications
// are of the same running instance when both are a tool.Instance with
// equal, non-nil Instance() values (the manager's: the plugin process),
// else when they are the same provider value. The same instance keeps
// what it was told: it hears nothing new about the URIs it still serves,
// and SubscribeResource(ctx, uri, false), through its newest publication,
// for a subscribed URI it no longer serves (withdrawn from its lists, or
// now another provider's, which is subscribed).
//
// The interest outlives the providers: when the provider that serves a
// URI changes (a new instance under the same name, a provider that sorts
// first now owning the URI, one that comes back after Remove), the URIs
// with interest are subscribed with the new one, and a provider that lost
// a URI but whose instance is still published is unsubscribed. A removed
// or replaced instance is not called again; the callers' releases keep
// working.
//
// ResourceUpdated is how the manager passes on a provider's report that a
// resource changed: the listeners of OnResourceUpdated hear the URI when
// that provider serves it now and someone is subscribed to it. A provider
// cannot speak for a URI another owns.
//
// No catalog lock is held while a provider runs. The calls about one URI
// are made in turn, so a second subscriber of a URI waits (until its ctx
// ends) for the provider's answer to the first.
//
// # The client's input
//
// A provider that needs the client's input (sampling, elicitation, roots)
// answers a call, read or prompt get with a *tool.InputRequired. The
// catalog returns a copy whose Provider names that provider; the protocol
// layer gets the client's answers and retries the request with tool.Input,
// whose Provider it copies from the InputRequired. Minutes may pass in
// between, and the providers may change meanwhile, but the answers and the
// provider's opaque state are that provider's alone: a retry goes to the
// provider that serves the name or URI now only when that is the one
// Input.Provider names. Otherwise (another provider serves it now, none
// does, or Input.Provider is empty) no provider is called and the error
// wraps tool.ErrGone and names both, e.g. `tool "x": provider "a", which
// asked for the client's input, no longer serves it (provider "b" does):
// call it again`.
//
// # Errors
//
// What each request returns, for the protocol layer to map: an unknown
// tool, prompt or resource wraps tool.ErrUnknownTool, tool.ErrUnknownPrompt
// or tool.ErrUnknownResource and names it; invalid arguments or completion
// params wrap tool.ErrBadArguments and name every problem; a retry that
// would reach another provider than the one that asked for the input wraps
// tool.ErrGone; a provider's *tool.InputRequired is returned naming the
// provider (above); a provider's other error that tool.Typed reports is
// returned as it is, since it names its cause; any other is wrapped naming
// what was asked and the provider, e.g. `resource "file:///x" of provider
// "files": disk full`, and still matches what it wraps.
//
// # Change events
//
// Every Set or Remove that changes an exposed list (a Set with identical
// definitions does not) opens or extends a burst. Each list is compared
// with the one before, as encoded, so republishing an unchanged provider,
// or one whose definitions differ only in white space, changes nothing.
// Subscribers are called once per burst: Options.Quiet after its last
// change, or Options.MaxDelay after its first if changes never stop, with
// a tool.Change saying which lists changed in the whole burst (templates
// count as Resources: MCP has one list_changed for both). They are called
// from one goroutine, in subscription order; a slow subscriber delays
// later events, never Set or Remove, and bursts that end meanwhile reach
// it as one call.
//
// A search index of the tools (host/toolsearch) cannot wait for a burst
// to go quiet: FollowTools hands its follower, at once after each Set or
// Remove, the exposed tools of every provider whose exposed tools changed
// (a clash in one held burst renames its providers' tools), or nil for a provider
// gone; AwaitFollowers waits until every follower has caught up with
// what is published (the host waits for it before serving searches, so
// the plugins found at start are searchable). Measured
// (BenchmarkFollowToolsIndex, 2 shared cores): an index holds a
// provider's 1,000 new or changed tools 10 to 16 ms after Set published
// them, and forgets them 0 to 2 ms after Remove; Set itself takes 55 to
// 100 ms to check and compile those 1,000 definitions.
package catalog
