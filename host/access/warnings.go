package access

import (
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"

	"github.com/plughost/plughost/host/tool"
)

// Warnings are what Compile found suspicious in rules that compile: each
// rule comparing item.name with a name in the form a clash gives
// (<provider>__<tool>). item.name is the provider's own name, so such a
// rule matches no tool (or only a tool its provider named so); it was
// written against the exposed name, which item.exposed holds. And each
// right of the console (item kinds console and approve) that the rules
// give to anyone at all (anyoneWarnings). serve logs them at start and
// `plughost check` prints them; they do not stop either. Nil for nil
// rules.
func (rs *Rules) Warnings() []string {
	if rs == nil {
		return nil
	}
	return rs.warnings
}

// exposedForms returns a warning for each string compared with item.name
// (==, != or in a list literal) in a's expression that holds "__".
func exposedForms(src Source, a *cel.Ast) []string {
	var out []string
	nav := ast.NavigateAST(a.NativeRep())
	for _, e := range ast.MatchDescendants(nav, ast.KindMatcher(ast.CallKind)) {
		call := e.AsCall()
		switch call.FunctionName() {
		case operators.Equals, operators.NotEquals, operators.In:
		default:
			continue
		}
		args := call.Args()
		if len(args) != 2 || !isItemName(args[0]) && !isItemName(args[1]) {
			continue
		}
		for _, arg := range args {
			for _, s := range stringsOf(arg) {
				if strings.Contains(s, "__") {
					now := "as an allow rule it admits no tool exposed under another name"
					if src.Deny {
						now = "as a deny rule it is also asked with item.name the exposed name, so it still denies"
					}
					out = append(out, fmt.Sprintf("%s:%d:%d: rule %q compares item.name with %q, which looks like an exposed name "+
						"(<provider>__<tool>, the form a name clash gives): item.name is the provider's own name (%s); "+
						"write item.plugin == 'PROVIDER' && item.name == 'TOOL' to match that tool whatever it is exposed as, "+
						"or item.exposed == %q to match the name clients see",
						src.File, src.Line, src.Column, src.Name, s, now, s))
				}
			}
		}
	}
	return out
}

// isItemName reports whether e is item.name.
func isItemName(e ast.Expr) bool {
	if e.Kind() != ast.SelectKind {
		return false
	}
	sel := e.AsSelect()
	op := sel.Operand()
	return sel.FieldName() == "name" && op.Kind() == ast.IdentKind && op.AsIdent() == "item"
}

// stringsOf returns the string literals e is, or a list literal holds.
func stringsOf(e ast.Expr) []string {
	switch e.Kind() {
	case ast.LiteralKind:
		if s, ok := e.AsLiteral().(types.String); ok {
			return []string{string(s)}
		}
	case ast.ListKind:
		var out []string
		for _, el := range e.AsList().Elements() {
			out = append(out, stringsOf(el)...)
		}
		return out
	}
	return nil
}

// anyoneWarnings warns of the console's rights (see the pages, approve a
// plugin) that the rules give to a caller with no subject, scopes or
// claims: to anyone the authorization server signs in. A rule written
// for tools before the console existed does it easily ("item.kind !=
// 'metrics' || …" holds for every other kind), and approving runs code,
// so it is named, with the allow rule that admits.
func (rs *Rules) anyoneWarnings() []string {
	anyone := &tool.Caller{}
	var out []string
	for _, kind := range []string{ItemConsole, ItemApprove} {
		it := &itemVars{Kind: kind, Name: kind}
		if !rs.explicitlyAllowed(anyone, it) {
			continue
		}
		g := rs.For(anyone).(*guard)
		for _, r := range rs.allow {
			if v, _ := r.eval(g.caller, it, noArguments); v == holds {
				out = append(out, fmt.Sprintf("%s:%d:%d: rule %q holds for item.kind == '%s' whoever the caller is: "+
					"anyone the console's sign-in admits may %s; write the rule so that it asks for a claim "+
					"(!(item.kind in ['metrics', 'console', 'approve']) || 'ops' in caller.claims.groups)",
					r.src.File, r.src.Line, r.src.Column, r.src.Name, kind, rightOf[kind]))
				break
			}
		}
	}
	return out
}

// rightOf says what a console item kind lets a person do.
var rightOf = map[string]string{ItemConsole: "see every plugin, caller and call", ItemApprove: "approve plugins, which runs their code"}
