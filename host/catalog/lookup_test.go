package catalog

import (
	"encoding/json"
	"testing"

	"github.com/plughost/plughost/host/tool"
)

// Tool finds every listed tool by its exposed name, with the bytes
// tools/list serves, and nothing by another name.
func TestToolLookup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{PageSize: 2})
	if got := f.cat.Tool("x"); got != nil {
		t.Errorf("Tool(x) on an empty catalog = %s, want nil", got)
	}
	f.cat.Set(newProvider("a", "x", "files.read", "only_a"))
	f.cat.Set(newProvider("b", "x"))
	f.cat.Set(&fakeProvider{name: "c", tools: []tool.Def{toolDef("hdr", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)}})

	n := 0
	cursor := ""
	for {
		page, next, err := f.cat.ListTools(cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page {
			name := toolName(t, raw)
			if got := f.cat.Tool(name); string(got) != string(raw) {
				t.Errorf("Tool(%q) = %s, want what tools/list serves: %s", name, got, raw)
			}
			n++
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if n != 5 {
		t.Fatalf("listed %d tools, want 5", n)
	}
	if got, want := string(f.cat.Tool("hdr")), `{"name":"hdr","description":"does hdr","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}`; got != want {
		t.Errorf("Tool(hdr) = %s, want %s", got, want)
	}
	// Own names that were exposed under another, and names never offered.
	for _, name := range []string{"x", "files.read", "", "nope", "a__only_a", "zzz"} {
		if got := f.cat.Tool(name); got != nil {
			t.Errorf("Tool(%q) = %s, want nil", name, got)
		}
	}
	// A removed tool is no longer found.
	f.cat.Remove("c")
	if got := f.cat.Tool("hdr"); got != nil {
		t.Errorf("Tool(hdr) after its provider left = %s, want nil", got)
	}
}

// toolName returns the "name" of a tool's JSON.
func toolName(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v struct{ Name string }
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("tool JSON %s: %v", raw, err)
	}
	return v.Name
}
