package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// listedTools sends tools/list (with the params' members rest, if any)
// and returns the names listed.
func listedTools(t *testing.T, c *client, rest string) []string {
	t.Helper()
	params, id := "", "1"
	if rest != "" {
		params, id = `,"params":{`+rest+`}`, "11" // the harness checks an id's answers by the era it was first sent in
	}
	out := c.roundtrip(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"` + params + `}`)
	if len(out) != 1 {
		t.Fatalf("tools/list: %q, want one response", out)
	}
	return toolNames(t, out[0])
}

// toolNames reads the names of a tools/list response.
func toolNames(t *testing.T, line string) []string {
	t.Helper()
	var r struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("tools/list: %s: %v", line, err)
	}
	var names []string
	for _, tl := range r.Result.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// searchNotes runs a search_tools of query (at most one hit, with the
// params' members rest, if any) and returns the notifications/tools/
// list_changed it prompted: 0 or 1 (the client settles, so a due one is
// written).
func searchNotes(t *testing.T, c *client, query, rest string) int {
	t.Helper()
	id := "8"
	if rest != "" {
		rest, id = ","+rest, "18" // as in listedTools
	}
	n := 0
	for _, line := range c.roundtrip(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"` + query + `","limit":1}` + rest + `}}`) {
		if strings.Contains(line, `"method":"notifications/tools/list_changed"`) {
			n++
		} else if !strings.Contains(line, `"id":`+id) || strings.Contains(line, `"isError":true`) {
			t.Fatalf("search %q: %s", query, line)
		}
	}
	return n
}

// TestFoundToolsJoinList: with AddFound 2, each search's hit joins the
// session's tools/list after the pins, with one list_changed when the
// list changed and none when it did not (found again, or pinned); the
// least recently found leaves at the bound, and a tool found again
// becomes the most recent. A stateless request adds nothing and lists
// none of the session's finds.
func TestFoundToolsJoinList(t *testing.T) {
	t.Parallel()
	for _, stdio := range []bool{false, true} {
		t.Run(map[bool]string{false: "chan", true: "stdio"}[stdio], func(t *testing.T) {
			t.Parallel()
			c := searchClientWith(t, stdio, 2)
			base := []string{"search_tools", "call_tool", "echo"}
			steps := []struct {
				query string
				notes int
				list  []string
			}{
				{"chatty", 1, []string{"chatty"}},
				{"chatty", 0, []string{"chatty"}}, // found again: no change
				{"echo", 0, []string{"chatty"}},   // pinned: listed anyway
				{"pretty", 1, []string{"chatty", "pretty"}},
				{"garbage", 1, []string{"pretty", "garbage"}}, // chatty leaves
				{"pretty", 0, []string{"garbage", "pretty"}},  // pretty is the most recent
				{"chatty", 1, []string{"pretty", "chatty"}},   // garbage leaves
			}
			for _, st := range steps {
				if n := searchNotes(t, c, st.query, ""); n != st.notes {
					t.Errorf("search %q: %d list_changed, want %d", st.query, n, st.notes)
				}
				if diff := cmp.Diff(slices.Concat(base, st.list), listedTools(t, c, "")); diff != "" {
					t.Errorf("tools/list after search %q (-want +got):\n%s", st.query, diff)
				}
			}
			if r := callOne(t, c, "chatty", ""); r.IsError || r.text() != "chatty done" {
				t.Errorf("chatty, found, by its name: %+v", r)
			}

			if n := searchNotes(t, c, "garbage", statelessMeta); n != 0 {
				t.Errorf("stateless search: %d list_changed, want none", n)
			}
			if got := listedTools(t, c, statelessMeta); !slices.Equal(got, base) {
				t.Errorf("stateless tools/list: %v, want %v (a stateless request has no session's finds)", got, base)
			}
			if got, want := listedTools(t, c, ""), slices.Concat(base, []string{"pretty", "chatty"}); !slices.Equal(got, want) {
				t.Errorf("tools/list after a stateless search: %v, want %v", got, want)
			}
		})
	}
}

// TestFoundToolsPerSession: two sessions of one server do not see each
// other's finds.
func TestFoundToolsPerSession(t *testing.T) {
	t.Parallel()
	c := searchClientWith(t, false, 4)
	searchNotes(t, c, "chatty", "")

	notes := newRecorder()
	other := c.srv.NewSession(notes)
	defer other.Close()
	handle := func(msg string) string {
		t.Helper()
		out := newRecorder()
		other.Handle(context.Background(), []byte(msg), out)
		if got := out.get(); len(got) == 1 {
			return got[0]
		}
		t.Fatalf("%s: answered %q, want one line", msg, out.get())
		return ""
	}
	handle(mcptest.InitMsg("2025-11-25"))
	other.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), newRecorder())
	if got, want := toolNames(t, handle(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)), []string{"search_tools", "call_tool", "echo"}; !slices.Equal(got, want) {
		t.Errorf("the other session's tools/list: %v, want %v", got, want)
	}
	handle(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"pretty","limit":1}}}`)
	if got, want := toolNames(t, handle(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)), []string{"search_tools", "call_tool", "echo", "pretty"}; !slices.Equal(got, want) {
		t.Errorf("the other session's tools/list after its search: %v, want %v", got, want)
	}
	if got, want := listedTools(t, c, ""), []string{"search_tools", "call_tool", "echo", "chatty"}; !slices.Equal(got, want) {
		t.Errorf("the first session's tools/list: %v, want %v", got, want)
	}
}

// lookupFunc is a ToolLookup.
type lookupFunc func(name string) json.RawMessage

func (f lookupFunc) Tool(name string) json.RawMessage { return f(name) }

// TestFoundToolGone: a found tool the catalog no longer exposes is not
// listed; back, it is listed again in its place.
func TestFoundToolGone(t *testing.T) {
	t.Parallel()
	gone := true
	sc := &searchCatalog{searchDef: searchToolDef(DefaultSearchDescription), pinned: []string{"echo"}, lookup: lookupFunc(func(name string) json.RawMessage {
		if name == "b" && gone {
			return nil
		}
		return json.RawMessage(`{"name":"` + name + `"}`)
	})}
	names := func() []string {
		defs, next, err := sc.listWith("", []string{"a", "b", "c"}, nil)
		if err != nil || next != "" {
			t.Fatalf("listWith: %v, next %q", err, next)
		}
		var names []string
		for _, d := range defs {
			var tl struct{ Name string }
			json.Unmarshal(d, &tl)
			names = append(names, tl.Name)
		}
		return names
	}
	if got, want := names(), []string{"search_tools", "call_tool", "echo", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("b gone: %v, want %v", got, want)
	}
	gone = false
	if got, want := names(), []string{"search_tools", "call_tool", "echo", "a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("b back: %v, want %v", got, want)
	}
}

// TestFoundToolsAdd: a search's hits join worst first (the best is the
// most recent); the bound evicts the least recently found; changed is
// called only when the set of names changed.
func TestFoundToolsAdd(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		before, add, want []string
		changed           bool
	}{
		"first":          {nil, []string{"a", "b"}, []string{"b", "a"}, true},
		"none":           {[]string{"a"}, nil, []string{"a"}, false},
		"again":          {[]string{"a", "b"}, []string{"a"}, []string{"b", "a"}, false},
		"evict":          {[]string{"a", "b", "c"}, []string{"d"}, []string{"b", "c", "d"}, true},
		"more than fits": {nil, []string{"a", "b", "c", "d"}, []string{"c", "b", "a"}, true},
		// The best two were found already: the worse one joins and leaves.
		"same set": {[]string{"b", "a", "x"}, []string{"a", "b", "x", "z"}, []string{"x", "b", "a"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			changed := false
			f := &foundTools{bound: 3, names: c.before, changed: func() { changed = true }}
			f.add(c.add)
			if got := f.list(); !slices.Equal(got, c.want) || changed != c.changed {
				t.Errorf("add %v to %v: %v, changed %v; want %v, changed %v", c.add, c.before, got, changed, c.want, c.changed)
			}
		})
	}
}
