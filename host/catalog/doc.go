// Package catalog aggregates the tools of many providers (plugins, device
// connections) into the one tool list an MCP server serves, and routes each
// call back to the provider that offers the tool.
//
// # Publishing and serving
//
// The plugin manager publishes; the protocol layer serves:
//
//	cat := catalog.New(nil) // defaults: 100 tools a page, events coalesced over 50ms
//	defer cat.Close()
//
//	cat.Set(weather)          // a tool.Provider named "weather": reads weather.Tools() now
//	cat.Set(files)            // another provider
//	cat.Remove("weather")     // its tools are gone
//
//	page, next, err := cat.ListTools("")            // tools/list
//	res, err := cat.CallTool(ctx, &tool.Call{...})  // tools/call, by exposed name
//	cancel := cat.Subscribe(func() { /* send notifications/tools/list_changed */ })
//
// ListTools and CallTool read an immutable snapshot through an atomic
// pointer and take no lock, so a slow tool never holds up a listing,
// another call, or a Set. Set and Remove build the next snapshot: they
// check every tool, compile its input schema, name it and encode its JSON
// once, so listing is a slice of pre-encoded objects.
//
// # Names
//
// A tool keeps the name its provider gives it. When two or more providers
// offer the same name, every one of them is exposed as <provider>__<tool>,
// and a warning names the providers; when the clash goes away, the bare
// name comes back. Either way subscribers are told, since the list changed.
//
// Exposed names always match ^[a-zA-Z0-9_-]{1,64}$, which is stricter than
// MCP's [A-Za-z0-9_.-]{1,128} (Claude Desktop refuses the rest). So '.'
// becomes '_', and a name that is then too long, or that now collides with
// another one, is cut and given a stable hash of its provider and tool:
// "a.very.long.name…" becomes "a_very_long_name…_1f2e3d4c". A name is never
// silently dropped: every rename is logged, and the result depends only on
// which providers offer which tools, never on the order of Set calls. The
// rules themselves live in package naming ([naming.Assign]); the catalog
// applies them on every Set and Remove.
//
// Provider names must be valid ([naming.ValidProvider]: 1 to 32 of
// [a-zA-Z0-9_-]). The plugin manager and the device bridge derive valid
// ones ([naming.ForFile], [naming.ForDevice]), so Set refuses (logs and
// ignores) only a provider built wrongly. A tool is skipped, with a warning
// naming provider, tool and reason (also listed by Skipped, and by
// `plughost plugins`), when its name is not 1 to 128 of [A-Za-z0-9_.-]
// ([naming.CheckName]), when its definition is not a JSON object with an
// "inputSchema" object, when a provider offers the name twice (the first
// wins), or when its inputSchema does not compile. The last is a choice:
// a tool whose arguments could never be checked is worse than a missing
// tool with a clear log line.
//
// # Tool JSON
//
// The exposed Tool object is the provider's JSON with "name" rewritten and
// nothing else changed: member order and fields the host does not know
// pass through (whitespace is compacted).
//
// # Pagination
//
// Pages hold Options.PageSize tools, sorted by exposed name. A cursor is
// the opaque encoding of the last name returned, so it survives changes
// between pages: the next page starts after that name, whatever came or
// went. A cursor the catalog did not issue is an error wrapping
// tool.ErrInvalidCursor.
//
// # Validation
//
// Input schemas are compiled with github.com/santhosh-tekuri/jsonschema/v6,
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
// # Change events
//
// Every Set or Remove that changes the encoded list (a Set with identical
// tools does not) opens or extends a burst. Subscribers are called once per
// burst: Options.Quiet after its last change, or Options.MaxDelay after its
// first if changes never stop. They are called from one goroutine, in
// subscription order; a slow subscriber delays later events, never Set or
// Remove.
package catalog
