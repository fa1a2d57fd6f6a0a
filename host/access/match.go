package access

import (
	"encoding/json"
	"fmt"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"

	"github.com/plughost/plughost/host/tool"
)

// A Match is one compiled selector over the variables rules see (caller,
// item, arguments): a hook's match (issue 33). Where a rule decides
// whether a use is allowed, a Match only says whether a question concerns
// its owner: it holds or it does not, and one that cannot be evaluated
// (a claim the token lacks) does not hold. It is safe for concurrent use.
type Match struct {
	r          *rule
	itemOnly   bool // ItemOnly's
	callerOnly bool // CallerOnly's
}

// CompileMatch compiles src.Expr (src.Deny is ignored) in the environment
// of the access rules: the error names the file, line and column in the
// expression, and src.Name, as Compile's do.
func CompileMatch(src Source) (*Match, error) {
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("access: the CEL environment: %w", err)
	}
	r, err := compile(env, src)
	if err != nil {
		return nil, err
	}
	m := &Match{r: r}
	if r.partial == nil {
		// Without the arguments, what it reads is bounded (the caller's
		// token, the item's definition): no cost tracking, which would
		// cost more than most matches do.
		checked, _ := env.Compile(src.Expr) // compiled above
		if r.prg, err = env.Program(checked); err != nil {
			return nil, fmt.Errorf("%s:%d:%d: %q: %w", src.File, src.Line, src.Column, src.Name, err)
		}
		m.itemOnly = itemOnly(checked)
		m.callerOnly = readsOnly(checked, "caller")
	}
	return m, nil
}

// ItemOnly reports whether the expression reads nothing but the item's
// kind, name, exposed name, URI and plugin: its value for one item is
// then the same for every caller and arguments, and a caller may keep it.
func (m *Match) ItemOnly() bool { return m.itemOnly }

// CallerOnly reports whether the expression reads nothing but the
// caller: a rate limit's rule, asked before any item is known, must not
// read one.
func (m *Match) CallerOnly() bool { return m.callerOnly }

// itemOnly reports whether the checked expression refers to no variable
// but item, and never to item.annotations.
func itemOnly(checked *cel.Ast) bool {
	if !readsOnly(checked, "item") {
		return false
	}
	nav := ast.NavigateAST(checked.NativeRep())
	for _, e := range ast.MatchDescendants(nav, ast.KindMatcher(ast.SelectKind)) {
		if e.AsSelect().FieldName() == "annotations" {
			return false
		}
	}
	return true
}

// readsOnly reports whether the checked expression refers to no variable
// but name.
func readsOnly(checked *cel.Ast, name string) bool {
	for _, ref := range checked.NativeRep().ReferenceMap() {
		if ref.Name != "" && ref.Name != name && ref.Value == nil && len(ref.OverloadIDs) == 0 {
			return false
		}
	}
	return true
}

// ReadsArguments reports whether the expression reads arguments: a caller
// passes them only then (Matches decodes them).
func (m *Match) ReadsArguments() bool { return m.r.partial != nil }

// Matches reports whether the expression holds for caller c (nil: nobody
// known, every field empty), item it and args (a JSON object; nil or not
// an object: no arguments). err says why one that could not be evaluated
// does not hold.
func (m *Match) Matches(c *tool.Caller, it *tool.Item, args json.RawMessage) (bool, error) {
	vars := noArguments
	if m.r.partial != nil && len(args) > 0 {
		var decoded map[string]any
		if json.Unmarshal(args, &decoded) == nil && decoded != nil {
			vars = decoded
		}
	}
	v, err := m.r.eval(callerOf(c), itemOf(it), vars)
	return v == holds, err
}

// callerOf is what a Match sees of c: its fields as rules see them,
// every claim included (a match decides nothing a guard caches).
func callerOf(c *tool.Caller) *callerVars {
	if c == nil {
		return &callerVars{Scopes: []string{}, Claims: map[string]any{}}
	}
	cv := &callerVars{Local: c.Local, Subject: c.Subject, ClientID: c.ClientID, Issuer: c.Issuer, Scopes: c.Scopes, Claims: c.Claims}
	if cv.Scopes == nil {
		cv.Scopes = []string{}
	}
	if cv.Claims == nil {
		cv.Claims = map[string]any{}
	}
	return cv
}
