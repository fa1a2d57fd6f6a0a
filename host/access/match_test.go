package access

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/tool"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	alice := &tool.Caller{Subject: "alice", Claims: map[string]any{"groups": []any{"ops"}}}
	files := &tool.Item{Kind: tool.ItemTool, Name: "write", Exposed: "files_write", Provider: "files"}
	vault := &tool.Item{Kind: tool.ItemTool, Name: "get", Provider: "vault"}
	for _, c := range []struct {
		expr   string
		caller *tool.Caller
		item   *tool.Item
		args   string
		want   bool
	}{
		{"item.plugin != 'vault'", alice, files, "", true},
		{"item.plugin != 'vault'", alice, vault, "", false},
		{"'ops' in caller.claims.groups", alice, files, "", true},
		{"'ops' in caller.claims.groups", nil, files, "", false}, // no claim: cannot be evaluated, does not hold
		{"caller.subject == ''", nil, files, "", true},
		{"arguments.path.startsWith('/srv/')", alice, files, `{"path":"/srv/a"}`, true},
		{"arguments.path.startsWith('/srv/')", alice, files, `{"path":"/etc"}`, false},
		{"has(arguments.path)", alice, files, "", false},
		{"item.exposed == 'files_write'", alice, files, "", true},
	} {
		m, err := CompileMatch(Source{Name: "m", Expr: c.expr, File: "f.hcl", Line: 1, Column: 1})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := m.Matches(c.caller, c.item, json.RawMessage(c.args))
		if got != c.want {
			t.Errorf("%s with caller %v, item %s, arguments %s: %v, want %v", c.expr, c.caller, c.item.Provider, c.args, got, c.want)
		}
		if m.ReadsArguments() != strings.Contains(c.expr, "arguments") {
			t.Errorf("%s: ReadsArguments %v", c.expr, m.ReadsArguments())
		}
	}
	if _, err := CompileMatch(Source{Name: "m", Expr: "item.nme == 'x'", File: "f.hcl", Line: 3, Column: 5}); err == nil || !strings.Contains(err.Error(), "f.hcl:3:") {
		t.Errorf("a misspelt field: %v", err)
	}
}

// ItemOnly holds for an expression that reads the item's names alone.
func TestMatchItemOnly(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string]bool{
		"item.plugin != 'vault'":                           true,
		"item.kind == 'tool' && item.name.startsWith('x')": true,
		"item.exposed in ['a', 'b'] || item.uri == 'u'":    true,
		"true":         true,
		"caller.local": false,
		"item.plugin == 'x' && caller.subject == 'a'":       false,
		"has(arguments.path)":                               false,
		"has(item.annotations.readOnlyHint)":                false,
		"item.plugin == 'x' && 'a' in caller.claims.groups": false,
	} {
		m, err := CompileMatch(Source{Name: "m", Expr: expr, File: "f.hcl", Line: 1, Column: 1})
		if err != nil {
			t.Fatal(err)
		}
		if m.ItemOnly() != want {
			t.Errorf("%s: ItemOnly %v, want %v", expr, m.ItemOnly(), want)
		}
	}
}
