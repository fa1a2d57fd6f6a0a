package mcp

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/toolsearch"
)

// searchClient is a client of a server in tool search mode, echo pinned,
// whose index holds the test catalog's listed tools and one tool the
// catalog does not expose (ghost: never found).
func searchClient(t *testing.T, stdio bool) *client {
	t.Helper()
	return searchClientWith(t, stdio, 0)
}

// searchClientWith is searchClient with ToolSearch.AddFound addFound.
func searchClientWith(t *testing.T, stdio bool, addFound int) *client {
	t.Helper()
	x := toolsearch.New()
	var defs []json.RawMessage
	for _, name := range mcptest.ToolNames {
		defs = append(defs, mcptest.NewCatalog().Tool(name))
	}
	defs = append(defs, json.RawMessage(`{"name":"ghost","description":"the ghost tool, echo of a gone plugin","inputSchema":{"type":"object"}}`))
	if err := x.Set("test", toolsearch.Provider{}, defs); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, clientOptions{stdio: stdio, server: Options{ToolSearch: &ToolSearch{Index: x, Pinned: []string{"echo", "absent"}, Limit: 2, AddFound: addFound}}})
	c.initialize("2025-11-25")
	return c
}

// toolResult is what the tests read of a CallToolResult.
type toolResult struct {
	ResultType string `json:"resultType"`
	Content    []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError           bool `json:"isError"`
	StructuredContent struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	} `json:"structuredContent"`
}

func (r toolResult) text() string {
	var s []string
	for _, c := range r.Content {
		s = append(s, c.Text)
	}
	return strings.Join(s, "\n")
}

func (r toolResult) found() []string {
	var names []string
	for _, t := range r.StructuredContent.Tools {
		names = append(names, t.Name)
	}
	return names
}

// callOne sends one tools/call of name with the params' remaining members
// (e.g. `"arguments":{...}`) and returns its result; it fails the test on
// anything but one response with a result.
func callOne(t *testing.T, c *client, name, rest string) toolResult {
	t.Helper()
	if rest != "" {
		rest = "," + rest
	}
	var out []string
	for _, line := range c.roundtrip(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + name + `"` + rest + `}}`) {
		if !strings.Contains(line, `"method":"notifications/`) {
			out = append(out, line)
		}
	}
	var r struct {
		Result *toolResult `json:"result"`
	}
	if len(out) != 1 || json.Unmarshal([]byte(out[0]), &r) != nil || r.Result == nil {
		t.Fatalf("tools/call %s: got %q, want one result", name, out)
	}
	return *r.Result
}

func forBothTransports(t *testing.T, f func(t *testing.T, c *client)) {
	for _, stdio := range []bool{false, true} {
		name := "chan"
		if stdio {
			name = "stdio" // calls started inline
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, searchClient(t, stdio))
		})
	}
}

// TestSearchModeList: tools/list offers the host's two tools and the
// pinned tools that exist, on one page.
func TestSearchModeList(t *testing.T) {
	t.Parallel()
	forBothTransports(t, func(t *testing.T, c *client) {
		out := c.roundtrip(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		var r struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
				NextCursor *string `json:"nextCursor"`
			} `json:"result"`
		}
		if len(out) != 1 || json.Unmarshal([]byte(out[0]), &r) != nil {
			t.Fatalf("tools/list: %q", out)
		}
		var names []string
		for _, tl := range r.Result.Tools {
			names = append(names, tl.Name)
		}
		if want := []string{"search_tools", "call_tool", "echo"}; !slices.Equal(names, want) || r.Result.NextCursor != nil {
			t.Errorf("tools/list: %v (next %v), want %v on one page", names, r.Result.NextCursor, want)
		}
		out = c.roundtrip(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"page-1"}}`)
		if len(out) != 1 || !strings.Contains(out[0], `"code":-32602`) {
			t.Errorf("tools/list with a cursor: %q, want -32602", out)
		}
	})
}

// TestSearchTools: search_tools finds listed and unlisted tools by their
// words, up to the limit (the configured one by default), never a tool
// the catalog does not expose; bad arguments are isError results.
func TestSearchTools(t *testing.T) {
	t.Parallel()
	forBothTransports(t, func(t *testing.T, c *client) {
		r := callOne(t, c, "search_tools", `"arguments":{"query":"the chatty tool"}`)
		if got := r.found(); r.IsError || len(got) != 2 || got[0] != "chatty" || len(r.StructuredContent.Tools[0].InputSchema) == 0 {
			t.Errorf("search chatty: found %v (isError %v), want chatty first with its inputSchema, 2 in all", got, r.IsError)
		}
		if !strings.Contains(r.text(), "- chatty: the chatty tool") {
			t.Errorf("search chatty: text %q, want a line naming chatty", r.text())
		}
		r = callOne(t, c, "search_tools", `"arguments":{"query":"echo","limit":5}`)
		if got := r.found(); !slices.Equal(got, []string{"echo"}) || !strings.HasPrefix(r.text(), `1 tool matches "echo"`) {
			t.Errorf("search echo: found %v (%q), want echo alone (ghost is not exposed)", got, r.text())
		}
		r = callOne(t, c, "search_tools", `"arguments":{"query":"zebra"}`)
		if r.IsError || len(r.found()) != 0 || !strings.Contains(r.text(), "No tool matches") {
			t.Errorf("search zebra: %+v, want no tool", r)
		}
		for args, want := range map[string]string{
			``:                                      `"query" is required`,
			`"arguments":{"query":3}`:               `"query" is required and must be a string`,
			`"arguments":{"query":"x","limit":0}`:   `"limit" must be an integer from 1 to 50`,
			`"arguments":{"query":"x","limit":51}`:  `"limit" must be an integer from 1 to 50`,
			`"arguments":{"query":"x","limit":"5"}`: `"limit" must be an integer`,
			`"arguments":{"query":"x","limit":2.5}`: `"limit" must be an integer`,
		} {
			if r := callOne(t, c, "search_tools", args); !r.IsError || !strings.Contains(r.text(), want) {
				t.Errorf("search_tools with %s: %+v, want an isError result saying %s", args, r, want)
			}
		}
	})
}

// TestCallToolTool: call_tool runs a tool by name with its arguments and
// returns its result as it is, progress included; a tool can still be
// called by its own name; an unknown name and bad arguments are isError
// results naming the problem.
func TestCallToolTool(t *testing.T) {
	t.Parallel()
	forBothTransports(t, func(t *testing.T, c *client) {
		if r := callOne(t, c, "call_tool", `"arguments":{"name":"echo","arguments":{"text":"hi"}}`); r.IsError || r.text() != "hi" {
			t.Errorf("call_tool echo: %+v, want hi", r)
		}
		if r := callOne(t, c, "chatty", ""); r.text() != "chatty done" {
			t.Errorf("chatty by its name (unlisted): %+v", r)
		}
		// The called tool's own checks: echo without text.
		if r := callOne(t, c, "call_tool", `"arguments":{"name":"echo"}`); !r.IsError || !strings.Contains(r.text(), "text is required") {
			t.Errorf("call_tool echo without text: %+v, want echo's isError", r)
		}
		// Progress reaches the client under the call_tool request's token.
		out := c.roundtrip(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"chatty"},"_meta":{"progressToken":"p"}}}`)
		if len(out) < 2 || !strings.Contains(out[0], `"method":"notifications/progress"`) || !strings.Contains(out[0], `"progressToken":"p"`) ||
			!strings.Contains(out[len(out)-1], "chatty done") {
			t.Errorf("call_tool chatty with a progress token: %q, want progress, then chatty's result", out)
		}
		for args, want := range map[string]string{
			`"arguments":{"name":"nope"}`: `call_tool: no tool is named \"nope\"`,
			// The host's names mean the catalog's tools through call_tool.
			`"arguments":{"name":"search_tools"}`: `call_tool: no tool is named \"search_tools\"`,
			`"arguments":{"name":"fail"}`:         "backend exploded",
			``:                                    `"name" is required`,
			`"arguments":{"name":7}`:              `"name" is required and must be a string`,
			`"arguments":{"name":"echo","arguments":[1]}`: `"arguments" must be an object`,
			`"arguments":{"name":"echo","arguments":"x"}`: `"arguments" must be an object`,
		} {
			if r := callOne(t, c, "call_tool", args); !r.IsError || !strings.Contains(r.text(), strings.ReplaceAll(want, `\"`, `"`)) {
				t.Errorf("call_tool with %s: %+v, want an isError result saying %s", args, r, want)
			}
		}
	})
}

// TestSearchModeStateless: a 2026-07-28 request uses both host tools, and
// a tool run through call_tool goes through input rounds as one called by
// its name.
func TestSearchModeStateless(t *testing.T) {
	t.Parallel()
	c := searchClient(t, true)
	r := callOne(t, c, "search_tools", `"arguments":{"query":"echo"},`+statelessMeta)
	if r.ResultType != "complete" || !slices.Equal(r.found(), []string{"echo"}) {
		t.Errorf("stateless search: %+v, want echo, complete", r)
	}
	r = callOne(t, c, "call_tool", `"arguments":{"name":"echo","arguments":{"text":"yo"}},`+statelessMeta)
	if r.ResultType != "complete" || r.text() != "yo" {
		t.Errorf("stateless call_tool echo: %+v", r)
	}
	var first struct {
		Result struct {
			ResultType   string `json:"resultType"`
			RequestState string `json:"requestState"`
		} `json:"result"`
	}
	survey := `"arguments":{"name":"survey"},`
	c.write(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"call_tool",` + survey + statelessMeta + `}}`)
	c.settle()
	out := c.take()
	if len(out) != 1 || json.Unmarshal([]byte(out[0]), &first) != nil || first.Result.ResultType != "input_required" {
		t.Fatalf("call_tool survey: %q, want an InputRequiredResult", out)
	}
	answer := `"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},"requestState":"` + first.Result.RequestState + `",`
	c.write(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"call_tool",` + survey + answer + statelessMeta + `}}`)
	c.settle()
	if out := c.take(); len(out) != 1 || !strings.Contains(out[0], "favourite color") {
		t.Errorf("call_tool survey, second round: %q, want the survey's next question", out)
	}
}

// TestSearchToolsOwnDescription: ToolSearch.Description replaces
// search_tools' description in tools/list; without it the host's is
// listed.
func TestSearchToolsOwnDescription(t *testing.T) {
	t.Parallel()
	const ours = `Finds our "internal" tools: describe the task.`
	for name, c := range map[string]struct{ set, want string }{
		"operator's": {ours, ours},
		"default":    {"", DefaultSearchDescription},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cl := newClient(t, clientOptions{stdio: true, server: Options{ToolSearch: &ToolSearch{Index: toolsearch.New(), Description: c.set}}})
			cl.initialize("2025-11-25")
			out := cl.roundtrip(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			var r struct {
				Result struct {
					Tools []struct {
						Name        string `json:"name"`
						Description string `json:"description"`
					} `json:"tools"`
				} `json:"result"`
			}
			if len(out) != 1 || json.Unmarshal([]byte(out[0]), &r) != nil || len(r.Result.Tools) == 0 {
				t.Fatalf("tools/list: %q", out)
			}
			if got := r.Result.Tools[0]; got.Name != SearchToolName || got.Description != c.want {
				t.Errorf("first tool %+v, want search_tools described %q", got, c.want)
			}
		})
	}
}
