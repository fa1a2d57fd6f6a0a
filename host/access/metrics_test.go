package access

import "testing"

// TestMetricsAllowed: the MCP listener's metrics are read only by a
// caller an allow rule admits explicitly (issue 31, attack 5): no rules,
// deny rules alone, or allow rules about tools admit no one; a deny rule
// that holds, or fails to evaluate, wins; the idiom that keeps tools
// allowed does.
func TestMetricsAllowed(t *testing.T) {
	t.Parallel()
	ops := `item.kind != 'metrics' || 'writers' in caller.claims.groups`
	for name, c := range map[string]struct {
		rules      []Source
		alice, bob bool
	}{
		"no rules":          {},
		"deny rules alone":  {rules: []Source{{Name: "d", Deny: true, Expr: "item.name == 'files_write'"}}},
		"allow about tools": {rules: []Source{{Name: "a", Expr: "item.plugin == 'files'"}}},
		"allow for writers": {rules: []Source{{Name: "ops", Expr: ops}}, alice: true},
		"allow, deny bob":   {rules: []Source{{Name: "all", Expr: "true"}, {Name: "d", Deny: true, Expr: "caller.subject == 'bob'"}}, alice: true},
		"deny that errs":    {rules: []Source{{Name: "ops", Expr: ops}, {Name: "d", Deny: true, Expr: "caller.claims.team == 'x'"}}},
		"deny on arguments": {rules: []Source{{Name: "ops", Expr: ops}, {Name: "d", Deny: true, Expr: "has(arguments.path)"}}, alice: true},
	} {
		t.Run(name, func(t *testing.T) {
			var rs *Rules
			if c.rules != nil {
				rs = mustCompile(t, c.rules...)
			}
			if got := rs.MetricsAllowed(alice); got != c.alice {
				t.Errorf("alice: %v, want %v", got, c.alice)
			}
			if got := rs.MetricsAllowed(bob); got != c.bob {
				t.Errorf("bob: %v, want %v", got, c.bob)
			}
			if len(c.rules) == 1 && c.rules[0].Name == "ops" && !rs.For(bob).Visible(read) {
				t.Errorf("the metrics rule hides bob's tools")
			}
		})
	}
}
