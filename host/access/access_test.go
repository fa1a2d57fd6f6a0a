package access

import (
	"errors"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/tool"
)

func mustCompile(t *testing.T, srcs ...Source) *Rules {
	t.Helper()
	rs, err := Compile(srcs)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

var (
	alice = &tool.Caller{Subject: "alice", Claims: map[string]any{"groups": []any{"writers"}}}
	bob   = &tool.Caller{Subject: "bob", Claims: map[string]any{"groups": []any{"readers"}}}
	anon  = &tool.Caller{}

	write = &tool.Item{Kind: tool.ItemTool, Name: "files_write", Provider: "files"}
	read  = &tool.Item{Kind: tool.ItemTool, Name: "files_read", Provider: "files", Annotations: map[string]any{"readOnlyHint": true}}
)

// The issue's two examples: only the writers group calls files_write, and
// no one with a path outside /srv.
func TestRulesOfTheIssue(t *testing.T) {
	rs := mustCompile(t,
		Source{Name: "only writers write", Deny: true, Expr: `item.name == 'files_write' && !(has(caller.claims.groups) && 'writers' in caller.claims.groups)`},
		Source{Name: "writes stay in /srv", Deny: true, Expr: `item.name == 'files_write' && !arguments.path.startsWith('/srv/')`},
	)
	a, b, n := rs.For(alice), rs.For(bob), rs.For(anon)
	if !a.Visible(write) || b.Visible(write) || n.Visible(write) {
		t.Errorf("files_write visible to alice, bob, anonymous = %v %v %v; want true false false", a.Visible(write), b.Visible(write), n.Visible(write))
	}
	if !a.Visible(read) || !b.Visible(read) || !n.Visible(read) {
		t.Error("files_read is hidden from someone; no rule names it")
	}
	if err := a.Allow(write, []byte(`{"path":"/srv/x"}`)); err != nil {
		t.Errorf("alice writing /srv/x: %v", err)
	}
	err := a.Allow(write, []byte(`{"path":"/etc/passwd"}`))
	if !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), `rule "writes stay in /srv" denies it`) || !strings.Contains(err.Error(), `"alice"`) {
		t.Errorf("alice writing /etc/passwd: %v; want a refusal naming alice and the rule", err)
	}
	if err := a.Allow(write, []byte(`{}`)); !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), "could not be evaluated") {
		t.Errorf("alice writing without a path: %v; want a refusal (the rule fails to evaluate)", err)
	}
	if err := b.Allow(write, []byte(`{"path":"/srv/x"}`)); !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), "only writers write") {
		t.Errorf("bob writing: %v; want a refusal by the first rule", err)
	}
}

func TestAllowRules(t *testing.T) {
	var refused []string
	defer func() {
		if len(refused) != 1 || refused[0] != NoAllowRule {
			t.Errorf("OnRefuse heard %q, want one %q", refused, NoAllowRule)
		}
	}()
	rs := mustCompile(t,
		Source{Name: "read-only for all", Expr: `has(item.annotations.readOnlyHint) && item.annotations.readOnlyHint == true`},
		Source{Name: "admins", Expr: `'admin' in caller.scopes`},
	)
	rs.OnRefuse(func(rule string) { refused = append(refused, rule) })
	admin := &tool.Caller{Subject: "root", Scopes: []string{"admin"}}
	if !rs.For(anon).Visible(read) || rs.For(anon).Visible(write) {
		t.Error("an anonymous caller should see the read-only tool only")
	}
	if !rs.For(admin).Visible(write) {
		t.Error("the admin scope should see every tool")
	}
	err := rs.For(bob).Allow(write, []byte(`{}`))
	if !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), "no allow rule admits it") {
		t.Errorf("bob calling files_write: %v", err)
	}
}

// A deny rule that depends on arguments leaves the item listed even when
// the allow rules cannot admit it otherwise... and no allow rule that
// cannot hold lists it.
func TestUnknownArgumentsAndAllow(t *testing.T) {
	rs := mustCompile(t,
		Source{Name: "small", Deny: true, Expr: `has(arguments.n) && arguments.n > 10`},
		Source{Name: "only alice", Expr: `caller.subject == 'alice'`},
	)
	if rs.For(bob).Visible(read) {
		t.Error("bob sees a tool no allow rule admits him to (the deny rule on arguments must not list it)")
	}
	if !rs.For(alice).Visible(read) {
		t.Error("alice should see it")
	}
	if err := rs.For(alice).Allow(read, []byte(`{"n":11}`)); !errors.Is(err, tool.ErrRefused) {
		t.Errorf("n=11: %v; want refused", err)
	}
	if err := rs.For(alice).Allow(read, []byte(`{"n":3}`)); err != nil {
		t.Errorf("n=3: %v", err)
	}
}

func TestCompileErrorsNameFileAndLine(t *testing.T) {
	_, err := Compile([]Source{
		{Name: "typo", Expr: `caller.sbuject == 'x'`, File: "plughost.hcl", Line: 12, Column: 13},
		{Name: "not bool", Expr: `caller.subject`, File: "plughost.hcl", Line: 15, Column: 11},
		{Name: "ok", Expr: `true`, File: "plughost.hcl", Line: 18, Column: 11},
	})
	if err == nil {
		t.Fatal("compiled")
	}
	for _, want := range []string{`plughost.hcl:12:19: rule "typo": undefined field 'sbuject'`, `plughost.hcl:15:11: rule "not bool": the expression is of type string`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestKeysTellCallersApart(t *testing.T) {
	rs := mustCompile(t, Source{Name: "x", Expr: `true`})
	if rs.For(alice).Key() == rs.For(bob).Key() {
		t.Error("alice and bob share a key")
	}
	if rs.For(alice).Key() != rs.For(&tool.Caller{Subject: "alice", Claims: map[string]any{"groups": []any{"writers"}, "jti": "t2", "exp": 2e9}}).Key() {
		t.Error("the same caller got two keys (another token of hers)")
	}
	// A reloaded configuration compiles its rules anew: a catalog must not
	// serve alice what the old rules decided for her (issue 35).
	if again := mustCompile(t, Source{Name: "x", Expr: `true`}); again.For(alice).Key() == rs.For(alice).Key() {
		t.Error("rules compiled twice give alice one key")
	}
	if Rules := (*Rules)(nil); Rules.For(alice) != nil {
		t.Error("no rules should give no guard")
	}
}

// A rule cannot run for long: a comprehension over a large argument is cut
// at the cost limit, which refuses.
func TestCostLimit(t *testing.T) {
	rs := mustCompile(t, Source{Name: "heavy", Deny: true, Expr: `arguments.xs.map(x, arguments.xs.map(y, x + y)).size() > 0`})
	xs := strings.Repeat("1,", 5000) + "1"
	err := rs.For(alice).Allow(read, []byte(`{"xs":[`+xs+`]}`))
	if !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), "cost") {
		t.Errorf("got %v; want a refusal naming the cost limit", err)
	}
}

func BenchmarkRuleVisible(b *testing.B) {
	rs, _ := Compile([]Source{
		{Name: "only writers write", Deny: true, Expr: `item.name == 'files_write' && !(has(caller.claims.groups) && 'writers' in caller.claims.groups)`},
		{Name: "writes stay in /srv", Deny: true, Expr: `item.name == 'files_write' && !arguments.path.startsWith('/srv/')`},
	})
	g := rs.For(alice)
	for b.Loop() {
		g.Visible(write)
	}
}

func BenchmarkRuleAllowWithArguments(b *testing.B) {
	rs, _ := Compile([]Source{
		{Name: "only writers write", Deny: true, Expr: `item.name == 'files_write' && !(has(caller.claims.groups) && 'writers' in caller.claims.groups)`},
		{Name: "writes stay in /srv", Deny: true, Expr: `item.name == 'files_write' && !arguments.path.startsWith('/srv/')`},
	})
	g := rs.For(alice)
	args := []byte(`{"path":"/srv/data/report.txt","content":"hello"}`)
	for b.Loop() {
		if err := g.Allow(write, args); err != nil {
			b.Fatal(err)
		}
	}
}

// A tool renamed by a clash is the same tool to the rules: item.name and
// item.plugin are the provider's, item.exposed what clients see, and a
// refusal names it as the caller called it.
func TestRenamedItem(t *testing.T) {
	renamed := &tool.Item{Kind: tool.ItemTool, Name: "create_file", Exposed: "files__create_file", Provider: "files"}
	other := &tool.Item{Kind: tool.ItemTool, Name: "create_file", Exposed: "device-x__create_file", Provider: "device-x"}
	rs := mustCompile(t,
		Source{Name: "no file creation from files", Deny: true, Expr: `item.plugin == 'files' && item.name == 'create_file'`},
		Source{Name: "no prefixed names", Deny: true, Expr: `item.exposed.startsWith('device-x__')`},
	)
	g := rs.For(bob)
	if g.Visible(renamed) || g.Visible(other) {
		t.Errorf("visible: files' %v, device-x's %v; want both hidden", g.Visible(renamed), g.Visible(other))
	}
	err := g.Allow(renamed, nil)
	if !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), "tool files__create_file is not allowed") {
		t.Errorf("Allow = %v, want a refusal naming the exposed name", err)
	}
	if w := rs.Warnings(); len(w) != 0 {
		t.Errorf("warnings %q, want none", w)
	}
}

// A rule comparing item.name with a <provider>__<tool> form is reported:
// item.name is the provider's own name, so it no longer matches.
func TestWarningsOnExposedForms(t *testing.T) {
	rs := mustCompile(t,
		Source{Name: "old", Deny: true, Expr: `item.name == 'files__create_file'`, File: "p.hcl", Line: 3, Column: 12},
		Source{Name: "list", Deny: true, Expr: `item.name in ['ok', 'a__b'] || 'c__d' != item.name`, File: "p.hcl", Line: 6, Column: 12},
		Source{Name: "fine", Deny: true, Expr: `item.exposed == 'files__create_file' || item.name == 'create_file' || item.uri == 'x__y'`},
	)
	w := rs.Warnings()
	if len(w) != 3 {
		t.Fatalf("warnings %q, want three (files__create_file, a__b, c__d)", w)
	}
	if !strings.HasPrefix(w[0], `p.hcl:3:12: rule "old" compares item.name with "files__create_file"`) ||
		!strings.Contains(w[0], `item.exposed == "files__create_file"`) {
		t.Errorf("warning %q, want it to locate the rule and suggest item.exposed", w[0])
	}
	if !strings.Contains(w[1], `"a__b"`) || !strings.Contains(w[2], `"c__d"`) {
		t.Errorf("warnings %q", w[1:])
	}
	var none *Rules
	if none.Warnings() != nil {
		t.Error("nil rules have warnings")
	}
}

// A deny rule written against an exposed name, as rules were before
// item.name became the provider's own name, still denies that tool (it is
// asked with item.name the exposed name too): an upgrade never lets
// through what such a rule denied, "__" form or not. An allow rule of
// that form admits nothing now (closed, not open).
func TestExposedFormRulesFailClosed(t *testing.T) {
	renamed := &tool.Item{Kind: tool.ItemTool, Name: "create_file", Exposed: "files__create_file", Provider: "files"}
	same := &tool.Item{Kind: tool.ItemTool, Name: "create_file", Exposed: "create_file", Provider: "device-x"}
	dotted := &tool.Item{Kind: tool.ItemTool, Name: "files.read", Exposed: "files_read", Provider: "files"}

	deny := mustCompile(t, Source{Name: "old deny", Deny: true, Expr: `item.name == 'files__create_file'`},
		Source{Name: "dotted deny", Deny: true, Expr: `item.name == 'files_read'`},
		Source{Name: "everyone", Expr: "true"}).For(bob)
	if err := deny.Allow(renamed, nil); !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), `rule "old deny" denies it`) {
		t.Errorf("the renamed tool: %v, want the old deny rule to refuse it", err)
	}
	if deny.Visible(renamed) {
		t.Error("the renamed tool is listed, want it hidden by the old deny rule")
	}
	if err := deny.Allow(same, nil); err != nil {
		t.Errorf("another provider's create_file, exposed as itself: %v, want it allowed", err)
	}
	if err := deny.Allow(dotted, nil); !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), `rule "dotted deny" denies it`) {
		t.Errorf("files.read exposed as files_read: %v, want the rule on files_read to refuse it", err)
	}

	allow := mustCompile(t, Source{Name: "old allow", Expr: `item.name == 'files__create_file'`}).For(bob)
	if err := allow.Allow(renamed, nil); !errors.Is(err, tool.ErrRefused) {
		t.Errorf("the renamed tool under an allow rule on its exposed name: %v, want it refused", err)
	}
}
