package access

import (
	"strings"
	"testing"
)

// TestConsoleAndApproveAllowed: the console's pages (kind "console") and
// its approve button (kind "approve", item.plugin the plugin) are decided
// as the metrics are: only an allow rule that holds admits, a deny rule
// that holds or fails refuses, and the rule of the console's browser test
// (everyone sees, only ops approve) keeps tools allowed.
func TestConsoleAndApproveAllowed(t *testing.T) {
	t.Parallel()
	opsApprove := `item.kind != 'approve' || 'writers' in caller.claims.groups`
	type want struct{ console, approveFiles, approveOther bool }
	for name, c := range map[string]struct {
		rules      []Source
		alice, bob want
	}{
		"no rules":          {},
		"deny rules alone":  {rules: []Source{{Name: "d", Deny: true, Expr: "item.name == 'files_write'"}}},
		"allow about tools": {rules: []Source{{Name: "a", Expr: "item.plugin == 'files' && item.kind == 'tool'"}}},
		"everyone sees, writers approve": {
			rules: []Source{{Name: "ops", Expr: opsApprove}},
			alice: want{true, true, true}, bob: want{console: true},
		},
		"approve one plugin only": {
			rules: []Source{{Name: "ops", Expr: `item.kind != 'approve' || item.plugin == 'files'`}},
			alice: want{true, true, false}, bob: want{true, true, false},
		},
		"metrics rule admits no approval": {
			rules: []Source{{Name: "m", Expr: `item.kind == 'tool' || item.kind == 'metrics'`}},
		},
		"deny bob the console": {
			rules: []Source{{Name: "all", Expr: "true"}, {Name: "d", Deny: true, Expr: "item.kind == 'console' && caller.subject == 'bob'"}},
			alice: want{true, true, true}, bob: want{approveFiles: true, approveOther: true},
		},
		"deny that errs": {rules: []Source{{Name: "ops", Expr: opsApprove}, {Name: "d", Deny: true, Expr: "caller.claims.team == 'x'"}}},
	} {
		t.Run(name, func(t *testing.T) {
			var rs *Rules
			if c.rules != nil {
				rs = mustCompile(t, c.rules...)
			}
			for who, w := range map[string]want{"alice": c.alice, "bob": c.bob} {
				caller := alice
				if who == "bob" {
					caller = bob
				}
				got := want{rs.ConsoleAllowed(caller), rs.ApproveAllowed(caller, "files"), rs.ApproveAllowed(caller, "other")}
				if got != w {
					t.Errorf("%s: console, approve files, approve other = %+v, want %+v", who, got, w)
				}
			}
			if name == "everyone sees, writers approve" && !rs.For(bob).Visible(read) {
				t.Errorf("the console rule hides bob's tools")
			}
		})
	}
}

// TestWarningsOnRightsForAnyone: a rule that gives the console's rights
// to any caller (one written for tools and metrics before the console,
// "true") is named with its place and the right it gives; a rule that
// asks for a claim, or whose claim test fails for a caller without
// claims, is not.
func TestWarningsOnRightsForAnyone(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		expr string
		want []string // the kinds warned of, in order
	}{
		"everything but metrics":     {expr: `item.kind != 'metrics' || 'ops' in caller.claims.groups`, want: []string{"console", "approve"}},
		"everyone sees, ops approve": {expr: `item.kind != 'approve' || 'ops' in caller.claims.groups`, want: []string{"console"}},
		"a claim for all three":      {expr: `!(item.kind in ['metrics', 'console', 'approve']) || 'ops' in caller.claims.groups`},
		"tools only":                 {expr: `item.kind == 'tool'`},
	} {
		t.Run(name, func(t *testing.T) {
			rs := mustCompile(t, Source{Name: "r", Expr: c.expr, File: "p.hcl", Line: 4, Column: 5})
			w := rs.Warnings()
			if len(w) != len(c.want) {
				t.Fatalf("warnings %q, want %d (%v)", w, len(c.want), c.want)
			}
			for i, kind := range c.want {
				if !strings.HasPrefix(w[i], `p.hcl:4:5: rule "r" holds for item.kind == '`+kind+`' whoever the caller is`) {
					t.Errorf("warning %q, want it to locate the rule and name kind %s", w[i], kind)
				}
			}
		})
	}
}
