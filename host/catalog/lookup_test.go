package catalog

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
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
	f.cat.SetAll(newProvider("a", "x", "files.read", "only_a"), newProvider("b", "x"))
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

// withholding is a provider that holds its tool "later" back, saying why.
type withholding struct{ *fakeProvider }

func (w withholding) WithheldTool(name string) string {
	if name == "later" {
		return "tool later of plugin " + w.name + " is new since its approval"
	}
	return ""
}

// A call of a name no provider lists is an unknown tool, unless a provider
// withholds it (tool.Withholder): then the call is refused with its
// reason, by the provider's own name or as it would be exposed, prefixed.
func TestCallOfAWithheldTool(t *testing.T) {
	t.Parallel()
	c := New(&Options{Logger: hclog.NewNullLogger()})
	defer c.Close()
	c.Set(withholding{newProvider("rug", "add")})
	for name, want := range map[string]string{
		"later":      "tool later of plugin rug is new since its approval",
		"rug__later": "tool later of plugin rug is new since its approval",
	} {
		_, err := c.CallTool(t.Context(), &tool.Call{Name: name, Arguments: json.RawMessage(`{}`)})
		if !errors.Is(err, tool.ErrRefused) || err.Error() != want {
			t.Errorf("call %s: %v, want tool.ErrRefused: %s", name, err, want)
		}
	}
	if _, err := c.CallTool(t.Context(), &tool.Call{Name: "nope", Arguments: json.RawMessage(`{}`)}); !errors.Is(err, tool.ErrUnknownTool) {
		t.Errorf("call nope: %v, want tool.ErrUnknownTool", err)
	}
}
