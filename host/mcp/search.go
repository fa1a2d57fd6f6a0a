package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/toolsearch"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Tool search mode (Options.ToolSearch): when hundreds of tools would flood
// the model, tools/list offers only the tools the operator pins and two
// tools of the host's own:
//
//   - search_tools {query: string, limit?: integer 1..50} finds the tools
//     that best match a natural-language query (package toolsearch ranks
//     them) and returns them best first: a text content naming each with
//     its description, for a model that reads text, and
//     structuredContent {"tools": [...]} holding each one's full MCP Tool
//     object (the same bytes a full tools/list would serve), so that the
//     model can call a found tool correctly at once;
//   - call_tool {name: string, arguments?: object} runs any tool by its
//     exposed name and returns its result as it is, for a client that
//     never refreshes its list of tools.
//
// Every exposed tool can still be called by its name with tools/call (a
// client may call what it found directly): only the list is smaller. Both
// host tools are served in both eras (sessions and stateless requests) by
// wrapping the catalog, so that a call through call_tool takes the path
// of every call: its arguments checked against the tool's inputSchema,
// its progress, logs, cancellation, input rounds and tasks as if it were
// called by name. Failures call_tool itself finds (arguments that are not
// {name, arguments}, an unknown tool) are isError results naming the
// problem, as a tool's bad arguments are, so the model can correct itself.
//
// The host's tools keep their names: a plugin tool exposed as search_tools
// or call_tool is shadowed in tools/list and tools/call, and is reached
// through call_tool ({"name": "search_tools", ...} always means the
// plugin's). Searches may find it; the host tells them apart by nothing
// but the way they are called.

// ToolSearch configures tool search mode (Options.ToolSearch).
type ToolSearch struct {
	// Index finds the tools. It must not be nil, and the caller keeps it
	// following the catalog (host/catalog's FollowTools, each provider's
	// exposed tools Set, or Removed when gone). A hit whose name the
	// catalog no longer exposes (a ToolLookup that says nil) is left out.
	Index *toolsearch.Index
	// Pinned are exposed names of tools listed in full as well, in this
	// order, after the host's two; a name no tool is exposed by is left
	// out until one is. Pins are looked up with the catalog's Tool
	// (ToolLookup): a catalog that is none lists no pinned tool.
	Pinned []string
	// Limit is how many tools a search returns when the query gives no
	// limit; 0 means DefaultSearchLimit. It is capped at MaxSearchLimit.
	Limit int
	// AddFound, when positive, adds the tools a session's searches find
	// to that session's tools/list, at most AddFound of them (the least
	// recently found leave first), and tells the client with
	// list_changed (found.go). 0 means off; it is capped at MaxAddFound.
	AddFound int
	// Description replaces search_tools' own description (the
	// configuration's search { description }); "" keeps the host's
	// (DefaultSearchDescription).
	Description string
}

// DefaultSearchDescription is search_tools' description unless
// ToolSearch.Description replaces it.
const DefaultSearchDescription = "Finds the tools that can do a task among all the tools this server offers (only a few are listed). " +
	"Describe the task in plain words; the best matches come first, each with its full definition. " +
	"Call a tool found by its name, or through call_tool."

// Limits of search_tools.
const (
	DefaultSearchLimit = 8
	MaxSearchLimit     = 50
)

// The host tools' names.
const (
	SearchToolName = "search_tools"
	CallToolName   = "call_tool"
	// HostProvider is the provider search_tools is counted under in
	// metrics and the audit log (CallEnd.Provider): the host itself.
	HostProvider = "plughost"
)

// The host tools' definitions.
var (
	callToolDef = json.RawMessage(`{"name":"` + CallToolName + `","title":"Call a tool",` +
		`"description":"Runs any tool of this server by its name (one search_tools found, say) with its arguments, and returns its result.",` +
		`"inputSchema":{"type":"object","properties":{` +
		`"name":{"type":"string","description":"The tool's name, as search_tools returned it"},` +
		`"arguments":{"type":"object","description":"The tool's arguments, as its inputSchema says"}},` +
		`"required":["name"]}}`)
)

// searchToolDef is search_tools' definition, with description.
func searchToolDef(description string) json.RawMessage {
	desc, _ := json.Marshal(description) // a string: cannot fail
	return json.RawMessage(`{"name":"` + SearchToolName + `","title":"Search tools",` +
		`"description":` + string(desc) + `,` +
		`"inputSchema":{"type":"object","properties":{` +
		`"query":{"type":"string","description":"What the tool should do, in natural language, e.g. \"current weather in a city\""},` +
		`"limit":{"type":"integer","minimum":1,"maximum":` + strconv.Itoa(MaxSearchLimit) + `,"description":"How many tools to return at most"}},` +
		`"required":["query"]},` +
		`"outputSchema":{"type":"object","properties":{"tools":{"type":"array","description":"The matching tools, best first: MCP Tool objects","items":{"type":"object"}}},"required":["tools"]},` +
		`"annotations":{"readOnlyHint":true,"openWorldHint":false}}`)
}

// searchCatalog is the Catalog a server in tool search mode serves: the
// catalog's, with tools/list and the two host tools its own.
type searchCatalog struct {
	Catalog
	// searchDef is search_tools' definition, with ToolSearch.Description.
	searchDef json.RawMessage
	lookup    ToolLookup // the catalog's, or nil
	seer      seer       // the catalog's, or nil: none hidden
	index     *toolsearch.Index
	pinned    []string
	limit     int
	// addFound is ToolSearch.AddFound, capped: the bound of each
	// session's found tools; 0 when off.
	addFound int
}

// withSearch returns c in search mode as ts says, and its searchCatalog
// (the sessions list their found tools with it).
func withSearch(c Catalog, ts *ToolSearch) (Catalog, *searchCatalog) {
	if ts.Index == nil {
		panic("mcp: ToolSearch.Index is nil")
	}
	sc := &searchCatalog{Catalog: c, index: ts.Index, pinned: ts.Pinned, limit: ts.Limit,
		searchDef: searchToolDef(cmp.Or(ts.Description, DefaultSearchDescription))}
	if sc.limit <= 0 {
		sc.limit = DefaultSearchLimit
	}
	sc.limit = min(sc.limit, MaxSearchLimit)
	sc.addFound = min(max(ts.AddFound, 0), MaxAddFound)
	sc.lookup, _ = c.(ToolLookup)
	sc.seer, _ = c.(seer)
	return sc, sc
}

// ListTools lists the host's tools and the pinned tools exposed now, on
// one page.
func (sc *searchCatalog) ListTools(cursor string) ([]json.RawMessage, string, error) {
	return sc.listWith(cursor, nil, nil)
}

// listWith is ListTools, with the tools of found (a session's found
// tools, least recently found first) that the catalog exposes now after
// the pins; of the pins and found tools, only those g sees (nil: all).
func (sc *searchCatalog) listWith(cursor string, found []string, g tool.Guard) ([]json.RawMessage, string, error) {
	if cursor != "" {
		return nil, "", fmt.Errorf("%w: tools/list cursor %q was not issued by this server (tool search mode lists one page)", tool.ErrInvalidCursor, cursor)
	}
	tools := []json.RawMessage{sc.searchDef, callToolDef}
	if sc.lookup == nil {
		return tools, "", nil
	}
	add := func(names []string) {
		for _, name := range names {
			if name == SearchToolName || name == CallToolName {
				continue // a pin shadowed (found never holds one)
			}
			if def := sc.lookup.Tool(name); def != nil && sc.sees(g, name) {
				tools = append(tools, def)
			}
		}
	}
	add(sc.pinned)
	add(found) // never a pin either (searchCatalog.search)
	return tools, "", nil
}

// seer is a catalog that knows what a guard hides (host/catalog).
type seer interface {
	Sees(g tool.Guard, name string) bool
}

// sees reports whether g sees the tool exposed as name.
func (sc *searchCatalog) sees(g tool.Guard, name string) bool {
	return g == nil || sc.seer == nil || sc.seer.Sees(g, name)
}

// Tool returns the definition of the tool exposed as name: the host's own
// for its two tools (ToolLookup).
func (sc *searchCatalog) Tool(name string) json.RawMessage {
	switch name {
	case SearchToolName:
		return sc.searchDef
	case CallToolName:
		return callToolDef
	}
	if sc.lookup == nil {
		return nil
	}
	return sc.lookup.Tool(name)
}

// StartCall serves the host's tools and passes any other call on to the
// catalog's StartCall.
func (ss *searchCatalog) StartCall(ctx context.Context, call *tool.Call, done func(json.RawMessage, error)) {
	switch call.Name {
	case SearchToolName:
		call.Provider, call.Routed = HostProvider, SearchToolName
		// In a goroutine: a search that ranks by meaning as well waits
		// for the embeddings endpoint to embed the query.
		go func() { done(ss.search(ctx, call.Arguments, call.Guard), nil) }()
	case CallToolName:
		fwd, failed := unwrapCall(call)
		if failed != nil {
			done(failed, nil)
			return
		}
		ss.Catalog.StartCall(ctx, fwd, func(res json.RawMessage, err error) {
			call.Provider, call.Routed = fwd.Provider, fwd.Routed
			done(unknownAsResult(fwd.Name, res, err))
		})
	default:
		ss.Catalog.StartCall(ctx, call, done)
	}
}

// unwrapCall returns the call call_tool's arguments name, carrying call's
// progress, logs, client's input and the rest; or, when the arguments are
// not {name: string, arguments?: object}, the isError result saying so.
func unwrapCall(call *tool.Call) (*tool.Call, json.RawMessage) {
	var args struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(orEmpty(call.Arguments), &args); err != nil || args.Name == nil {
		return nil, tool.ErrorResult(CallToolName + `: invalid arguments: "name" is required and must be a string, "arguments" an object`)
	}
	if a := args.Arguments; len(a) > 0 && string(a) != "null" && !jsonrpc.IsObject(a) {
		return nil, tool.ErrorResult(CallToolName + `: invalid arguments: "arguments" must be an object`)
	}
	fwd := *call
	fwd.Name, fwd.Arguments = *args.Name, args.Arguments
	return &fwd, nil
}

// unknownAsResult turns a call_tool of a tool no one exposes into an
// isError result naming it (a protocol error would say the call_tool
// request was malformed, which it was not).
func unknownAsResult(name string, res json.RawMessage, err error) (json.RawMessage, error) {
	if errors.Is(err, tool.ErrUnknownTool) {
		return tool.ErrorResult(fmt.Sprintf("%s: no tool is named %q; search_tools finds the tools there are", CallToolName, name)), nil
	}
	return res, err
}

// orEmpty is the arguments of a call: {} when there are none.
func orEmpty(args json.RawMessage) json.RawMessage {
	if a := strings.TrimSpace(string(args)); a == "" || a == "null" {
		return json.RawMessage("{}")
	}
	return args
}

// search answers search_tools: the best matches of the query, or an
// isError result naming what is wrong with the arguments. The hits join
// the found tools ctx carries, if any (a session's, with AddFound). A tool
// g hides is never a hit.
func (sc *searchCatalog) search(ctx context.Context, raw json.RawMessage, g tool.Guard) json.RawMessage {
	var args struct {
		Query *string         `json:"query"`
		Limit json.RawMessage `json:"limit"`
	}
	if err := json.Unmarshal(orEmpty(raw), &args); err != nil || args.Query == nil {
		return tool.ErrorResult(SearchToolName + `: invalid arguments: "query" is required and must be a string`)
	}
	limit := sc.limit
	if len(args.Limit) > 0 && string(args.Limit) != "null" {
		n, err := strconv.Atoi(string(args.Limit))
		if err != nil || n < 1 || n > MaxSearchLimit {
			return tool.ErrorResult(fmt.Sprintf(`%s: invalid arguments: "limit" must be an integer from 1 to %d`, SearchToolName, MaxSearchLimit))
		}
		limit = n
	}
	hits := sc.index.SearchContext(ctx, *args.Query, limit, func(_, name string) bool {
		return (sc.lookup == nil || sc.lookup.Tool(name) != nil) && sc.sees(g, name)
	})
	if f := foundIn(ctx); f != nil {
		f.add(sc.unlisted(hits))
	}
	return searchResult(*args.Query, hits)
}

// unlisted returns the names of the hits that tools/list does not hold
// anyway: neither a pin nor a plugin tool the host's tools shadow.
func (sc *searchCatalog) unlisted(hits []toolsearch.Hit) []string {
	names := make([]string, 0, len(hits))
	for _, h := range hits {
		if h.Name != SearchToolName && h.Name != CallToolName && !slices.Contains(sc.pinned, h.Name) {
			names = append(names, h.Name)
		}
	}
	return names
}

// searchResult is search_tools' CallToolResult for hits.
func searchResult(query string, hits []toolsearch.Hit) json.RawMessage {
	var text strings.Builder
	switch len(hits) {
	case 0:
		fmt.Fprintf(&text, "No tool matches %q. Try other words: what the tool does, or the service it works with.", query)
	case 1:
		fmt.Fprintf(&text, "1 tool matches %q. Call it by its name, or through %s; its inputSchema is in structuredContent.\n", query, CallToolName)
	default:
		fmt.Fprintf(&text, "%d tools match %q, best first. Call one by its name, or through %s; each one's inputSchema is in structuredContent.\n", len(hits), query, CallToolName)
	}
	defs := make([]json.RawMessage, len(hits))
	for i, h := range hits {
		defs[i] = h.Def
		d, _ := jsonrpc.Unquote(jsonrpc.Member(h.Def, "description")) // the catalog checked the definition; a description that is no string is none
		desc, _, _ := strings.Cut(strings.TrimSpace(d), "\n")
		fmt.Fprintf(&text, "\n- %s: %s", h.Name, desc)
	}
	type content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	b, err := json.Marshal(struct {
		Content    []content `json:"content"`
		Structured struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"structuredContent"`
	}{Content: []content{{"text", text.String()}}, Structured: struct {
		Tools []json.RawMessage `json:"tools"`
	}{defs}})
	if err != nil {
		panic(err) // strings and JSON the catalog checked
	}
	return b
}
