// Package access decides who may list and use which tools, prompts and
// resources: the rules of the configuration's access block, written in CEL
// (github.com/google/cel-go, the language of Kubernetes' admission rules
// and of agentgateway's MCP authorization).
//
//	access {
//	  rule "only writers write" {
//	    deny = "item.name == 'files_write' && !('writers' in caller.claims.groups)"
//	  }
//	  rule "writes stay in /srv" {
//	    deny = "item.name == 'files_write' && !arguments.path.startsWith('/srv/')"
//	  }
//	}
//
// item.name and item.plugin identify a tool whatever it is exposed as: when
// two providers offer the same name, or a name cannot be served as it is,
// the tool is exposed under another name (files__create_file, say), and a
// rule on item.name still matches it, and matches no other provider's tool
// of that name unless the rule says so. A rule on what clients see writes
// item.exposed. A rule comparing item.name with a name in the form only a
// clash gives ('files__create_file') matches no tool: Compile reports it
// among the Warnings.
//
// A rule is one CEL expression of type bool, under allow or deny. Each sees:
//
//   - caller: subject, client_id, issuer, scopes (a list), claims (the
//     access token's claims, a map, but for those of the token alone:
//     jti, iat, exp, nbf, auth_time), local (true on stdio);
//   - item: kind ("tool", "prompt", "resource", "resource_template",
//     "metrics", "console", "approve"), name (a tool's or prompt's own name, as its provider
//     offers it; a resource's or template's "name"), exposed (the name
//     clients see and call a tool or prompt by; "" for resources), uri,
//     plugin (its provider) and annotations (a map);
//   - arguments: the call's arguments (a prompt get's for a prompt), a map.
//
// How they decide, for one caller and one item (deny first, as in most
// policy languages):
//
//  1. a deny rule that holds refuses;
//  2. else, when there is any allow rule, one must hold;
//  3. else the item is allowed.
//
// The metrics the MCP listener serves (GET /metrics) are one more item,
// of kind "metrics" and name "metrics", decided otherwise: only an allow
// rule that holds lets a caller read them (with no deny rule holding), so
// that with no rules, or rules about tools alone, no OAuth caller reads
// them: they name every tool and count every caller's calls. Since any
// allow rule makes every item need one, write such a rule so that it
// holds for the other items but the console's: allow = "!(item.kind in
// ['metrics', 'console', 'approve']) || 'ops' in caller.claims.groups".
// See [Rules.MetricsAllowed].
//
// The console (plughost's pages in a browser) is decided the same way for
// a person signed in there through the authorization server: an item of
// kind "console" (name "console") to see its pages, and one of kind
// "approve" (name "approve", item.plugin the plugin) to approve or revoke
// a plugin. allow = "!(item.kind in ['console', 'approve']) || 'ops' in
// caller.claims.groups" lets the ops group do both; item.kind !=
// 'approve' || 'ops' in caller.claims.groups lets every caller see the
// pages and only ops approve. See [Rules.ConsoleAllowed] and
// [Rules.ApproveAllowed].
//
// A rule that fails to evaluate (a claim the token lacks, say) counts as
// holding for a deny rule and as not holding for an allow rule: errors
// refuse. Write has(caller.claims.groups) to test a claim's presence.
//
// Lists are decided without arguments. A rule whose value depends on them
// is unknown then (CEL's partial evaluation): the item is listed, and each
// call is decided with its arguments. So a rule on arguments narrows calls
// and never hides a tool, and a rule on anything else hides the item from
// the caller's lists and refuses it whatever the arguments.
package access

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"

	"github.com/plughost/plughost/host/tool"
)

// DefaultCostLimit bounds one rule's evaluation, in CEL's cost units (about
// one per operation): a comprehension over a huge list in a call's
// arguments stops there and refuses.
const DefaultCostLimit = 1_000_000

// Source is one rule as the configuration writes it.
type Source struct {
	// Name is the rule's label, which refusals and errors quote.
	Name string
	// Deny is true for a deny rule, false for an allow rule.
	Deny bool
	// Expr is the CEL expression.
	Expr string
	// File, Line and Column locate the expression's first character, so
	// that an error in it names the line it is on.
	File         string
	Line, Column int
}

// Rules is a compiled rule set. It is safe for concurrent use.
type Rules struct {
	deny, allow []*rule
	args        bool              // does any rule read arguments?
	onRefuse    func(rule string) // OnRefuse's
	warnings    []string          // Warnings'
	// generation starts each guard's key: what a catalog keeps of a
	// guard's decisions (by key) must not serve the guard of the same
	// caller under rules compiled later (a configuration reloaded).
	generation string
}

// generations numbers the rule sets compiled by this process.
var generations atomic.Uint64

// NoAllowRule is the rule OnRefuse names when no allow rule admitted a
// use.
const NoAllowRule = "(no allow rule)"

// OnRefuse makes fn learn of each use a rule refuses (a call, read or
// prompt get that Allow refuses), by the rule's name, for metrics: the
// names are the configuration's, a bounded set. Call it before the rules
// serve.
func (rs *Rules) OnRefuse(fn func(rule string)) {
	if rs != nil {
		rs.onRefuse = fn
	}
}

// rule is one compiled rule.
type rule struct {
	src Source
	prg cel.Program // evaluates with every variable known
	// partial evaluates with the arguments unknown (CEL's partial
	// evaluation, slower): nil when the rule does not read them.
	partial  cel.Program
	warnings []string // exposedForms'
}

// callerVars and itemVars are what rules see of a caller and an item
// (CEL native types: a field a rule misspells is a compile error).
type callerVars struct {
	Subject  string         `cel:"subject"`
	ClientID string         `cel:"client_id"`
	Issuer   string         `cel:"issuer"`
	Scopes   []string       `cel:"scopes"`
	Claims   map[string]any `cel:"claims"`
	Local    bool           `cel:"local"`
}

type itemVars struct {
	Kind        string         `cel:"kind"`
	Name        string         `cel:"name"`
	Exposed     string         `cel:"exposed"`
	URI         string         `cel:"uri"`
	Plugin      string         `cel:"plugin"`
	Annotations map[string]any `cel:"annotations"`
}

// newEnv is the CEL environment of every rule: the three variables and
// CEL's string extensions (startsWith and the rest are standard; ext adds
// split, lowerAscii and such).
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(ext.ParseStructTags(true), reflect.TypeFor[callerVars](), reflect.TypeFor[itemVars]()),
		cel.Variable("caller", cel.ObjectType("access.callerVars")),
		cel.Variable("item", cel.ObjectType("access.itemVars")),
		cel.Variable("arguments", cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(),
	)
}

// Compile compiles the rules; the error names each rule that does not
// compile, at file:line:column, and says why. No rules compile to nil:
// everything is allowed.
func Compile(srcs []Source) (*Rules, error) {
	if len(srcs) == 0 {
		return nil, nil
	}
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("access: the CEL environment: %w", err)
	}
	rs := &Rules{generation: strconv.FormatUint(generations.Add(1), 10) + ":"}
	var errs []string
	for _, src := range srcs {
		r, err := compile(env, src)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		rs.warnings = append(rs.warnings, r.warnings...)
		if src.Deny {
			rs.deny = append(rs.deny, r)
		} else {
			rs.allow = append(rs.allow, r)
		}
		rs.args = rs.args || r.partial != nil
	}
	if errs != nil {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	rs.warnings = append(rs.warnings, rs.anyoneWarnings()...)
	return rs, nil
}

func compile(env *cel.Env, src Source) (*rule, error) {
	ast, iss := env.Compile(src.Expr)
	if iss.Err() != nil {
		var msgs []string
		for _, e := range iss.Errors() {
			line, col := src.Line+e.Location.Line()-1, e.Location.Column()+1
			if e.Location.Line() == 1 {
				col += src.Column - 1
			}
			msgs = append(msgs, fmt.Sprintf("%s:%d:%d: rule %q: %s", src.File, line, col, src.Name, e.Message))
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "\n"))
	}
	if ast.OutputType() != cel.BoolType {
		return nil, fmt.Errorf("%s:%d:%d: rule %q: the expression is of type %s; a rule must be true or false", src.File, src.Line, src.Column, src.Name, ast.OutputType())
	}
	r := &rule{src: src, warnings: exposedForms(src, ast)}
	var err error
	if r.prg, err = env.Program(ast, cel.CostLimit(DefaultCostLimit)); err == nil && readsArguments(ast) {
		r.partial, err = env.Program(ast, cel.EvalOptions(cel.OptPartialEval), cel.CostLimit(DefaultCostLimit))
	}
	if err != nil {
		return nil, fmt.Errorf("%s:%d:%d: rule %q: %w", src.File, src.Line, src.Column, src.Name, err)
	}
	return r, nil
}

// readsArguments reports whether the checked expression refers to the
// arguments variable.
func readsArguments(ast *cel.Ast) bool {
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == "arguments" {
			return true
		}
	}
	return false
}

// A verdict is what one rule says of one question.
type verdict int

const (
	holds verdict = iota
	fails
	unknown // it depends on the arguments, which are not known
	broken  // it could not be evaluated
)

// eval evaluates r; args nil means the arguments are unknown.
func (r *rule) eval(c *callerVars, it *itemVars, args map[string]any) (verdict, error) {
	var v ref.Val
	var err error
	if args == nil && r.partial != nil {
		act, perr := cel.PartialVars(map[string]any{"caller": c, "item": it}, cel.AttributePattern("arguments"))
		if perr != nil {
			return broken, perr
		}
		v, _, err = r.partial.Eval(act)
	} else {
		if args == nil {
			args = noArguments
		}
		v, _, err = r.prg.Eval(&vars{caller: c, item: it, args: args})
	}
	switch {
	case err != nil:
		return broken, err
	case types.IsUnknown(v):
		return unknown, nil
	case v == types.True:
		return holds, nil
	case v == types.False:
		return fails, nil
	}
	return broken, fmt.Errorf("the rule gave %v, not a bool", v)
}

// noArguments are the arguments of a use without any.
var noArguments = map[string]any{}

// vars is the activation of a full evaluation: the three variables, with
// no map to build per evaluation.
type vars struct {
	caller *callerVars
	item   *itemVars
	args   map[string]any
}

func (a *vars) ResolveName(name string) (any, bool) {
	switch name {
	case "caller":
		return a.caller, true
	case "item":
		return a.item, true
	case "arguments":
		return a.args, true
	}
	return nil, false
}

func (a *vars) Parent() cel.Activation { return nil }

// tokenClaims are the claims of one token rather than of its caller (its
// id and times): rules do not see them, so that the guards of one caller's
// successive tokens share a key, and what one decided serves the next.
var tokenClaims = map[string]bool{"jti": true, "iat": true, "exp": true, "nbf": true, "auth_time": true}

// For returns the guard of one caller; nil rules return nil (everything
// allowed).
func (rs *Rules) For(c *tool.Caller) tool.Guard {
	if rs == nil {
		return nil
	}
	cv := &callerVars{Local: c.Local, Subject: c.Subject, ClientID: c.ClientID, Issuer: c.Issuer, Scopes: c.Scopes,
		Claims: make(map[string]any, len(c.Claims))}
	if cv.Scopes == nil {
		cv.Scopes = []string{}
	}
	for k, v := range c.Claims {
		if !tokenClaims[k] {
			cv.Claims[k] = v
		}
	}
	key, _ := json.Marshal(cv) // of strings, bools and JSON values: cannot fail
	return &guard{rules: rs, caller: cv, key: rs.generation + string(key)}
}

// guard is one caller's view of the rules.
type guard struct {
	rules  *Rules
	caller *callerVars
	key    string
}

func (g *guard) Key() string { return g.key }

// Visible reports whether some arguments could be allowed.
func (g *guard) Visible(it *tool.Item) bool {
	v, _, _ := g.decide(itemOf(it), nil)
	return v != fails
}

// Allow decides one use with these arguments, in one evaluation of each
// rule (the arguments decoded only when a rule reads them).
func (g *guard) Allow(it *tool.Item, raw json.RawMessage) error {
	args := noArguments
	if g.rules.args && len(raw) > 0 {
		args = map[string]any{}
		if err := json.Unmarshal(raw, &args); err != nil {
			return tool.Errorf(tool.ErrBadArguments, "%s %s: arguments are not a JSON object: %v", it.Kind, displayName(it), err)
		}
	}
	v, why, rule := g.decide(itemOf(it), args)
	if v == fails {
		if f := g.rules.onRefuse; f != nil {
			f(rule)
		}
		return tool.Errorf(tool.ErrRefused, "%s %s is not allowed for %s: %s", it.Kind, displayName(it), g.who(), why)
	}
	return nil
}

// decide applies the rules (see the package doc); args nil means unknown.
// It returns holds (allowed), fails (refused, with why and the rule that
// refused, NoAllowRule when none admitted it), or unknown.
func (g *guard) decide(it *itemVars, args map[string]any) (v verdict, why, rule string) {
	maybe := false
	for _, r := range g.rules.deny {
		switch v, err := r.evalDeny(g.caller, it, args); v {
		case holds:
			return fails, fmt.Sprintf("rule %q denies it", r.src.Name), r.src.Name
		case broken:
			return fails, fmt.Sprintf("rule %q could not be evaluated (%v), which denies", r.src.Name, err), r.src.Name
		case unknown:
			maybe = true
		}
	}
	if len(g.rules.allow) > 0 {
		allowed, perhaps := false, false
		for _, r := range g.rules.allow {
			v, _ := r.eval(g.caller, it, args)
			if v == holds {
				allowed = true
				break
			}
			perhaps = perhaps || v == unknown
		}
		if !allowed && !perhaps {
			return fails, "no allow rule admits it", NoAllowRule
		}
		maybe = maybe || !allowed
	}
	if maybe {
		return unknown, "", ""
	}
	return holds, "", ""
}

// evalDeny is eval for a deny rule. For an item exposed under another
// name than its own, a deny rule is asked with item.name the exposed
// name too, and holds if either holds: a rule written against exposed
// names ("files__create_file", "files_read" for files.read), as rules
// were before item.name became the provider's own name, keeps denying
// what it was written to deny, where matching nothing would silently let
// it through. Asking twice only ever denies more.
func (r *rule) evalDeny(c *callerVars, it *itemVars, args map[string]any) (verdict, error) {
	v, err := r.eval(c, it, args)
	if v == holds || it.Exposed == "" || it.Exposed == it.Name {
		return v, err
	}
	as := *it
	as.Name = it.Exposed
	switch v2, err2 := r.eval(c, &as, args); {
	case v2 == holds, v2 == broken && v != broken:
		return v2, err2
	case v2 == unknown && v == fails:
		return unknown, nil
	}
	return v, err
}

// ItemMetrics is the kind (and name) of the item rules see when a caller
// asks for the MCP listener's metrics.
const ItemMetrics = "metrics"

// ItemConsole is the kind (and name) of the item rules see when a person
// signed in to the console through the authorization server opens one of
// its pages; ItemApprove the kind (and name) of the item for approving or
// revoking a plugin there (item.plugin is the plugin).
const (
	ItemConsole = "console"
	ItemApprove = "approve"
)

// MetricsAllowed reports whether the caller c may read the MCP listener's
// metrics: an allow rule holds for the item of kind ItemMetrics and no
// deny rule does (one that fails to evaluate denies). No rules (rs nil)
// allow no one.
func (rs *Rules) MetricsAllowed(c *tool.Caller) bool {
	return rs.explicitlyAllowed(c, &itemVars{Kind: ItemMetrics, Name: ItemMetrics})
}

// ConsoleAllowed reports whether the caller c (a person signed in to the
// console through the authorization server) may see the console's pages,
// decided as MetricsAllowed is: only an allow rule that holds for the item
// of kind ItemConsole admits, since the pages show every plugin, caller
// and call. No rules allow no one.
func (rs *Rules) ConsoleAllowed(c *tool.Caller) bool {
	return rs.explicitlyAllowed(c, &itemVars{Kind: ItemConsole, Name: ItemConsole})
}

// ApproveAllowed reports whether the caller c may approve or revoke
// plugin in the console: an allow rule holds for the item of kind
// ItemApprove whose plugin is plugin, and no deny rule does. So a rule
// may let a person approve some plugins only (item.plugin == 'files').
// No rules allow no one.
func (rs *Rules) ApproveAllowed(c *tool.Caller, plugin string) bool {
	return rs.explicitlyAllowed(c, &itemVars{Kind: ItemApprove, Name: ItemApprove, Plugin: plugin})
}

// explicitlyAllowed decides an item of the host's own (metrics, console,
// approve) rather than a plugin's: only an allow rule that holds admits
// (with no deny rule holding or failing), where a tool is allowed by no
// rule at all. An operator who wrote rules about tools alone has given no
// one these rights.
func (rs *Rules) explicitlyAllowed(c *tool.Caller, it *itemVars) bool {
	if rs == nil {
		return false
	}
	g := rs.For(c).(*guard)
	it.Annotations = map[string]any{}
	for _, r := range rs.deny {
		if v, _ := r.eval(g.caller, it, noArguments); v != fails {
			return false
		}
	}
	for _, r := range rs.allow {
		if v, _ := r.eval(g.caller, it, noArguments); v == holds {
			return true
		}
	}
	return false
}

// who names the caller in a refusal.
func (g *guard) who() string {
	switch c := g.caller; {
	case c.Subject != "":
		return fmt.Sprintf("%q", c.Subject)
	case c.ClientID != "":
		return fmt.Sprintf("client %q", c.ClientID)
	}
	return "an anonymous caller"
}

// displayName names the item as its caller knows it: a tool's or
// prompt's exposed name, a resource's name, else its URI.
func displayName(it *tool.Item) string {
	switch {
	case it.Exposed != "":
		return it.Exposed
	case it.Name == "":
		return it.URI
	}
	return it.Name
}

func itemOf(it *tool.Item) *itemVars {
	iv := &itemVars{Kind: string(it.Kind), Name: it.Name, Exposed: it.Exposed, URI: it.URI, Plugin: it.Provider, Annotations: it.Annotations}
	if iv.Annotations == nil {
		iv.Annotations = map[string]any{}
	}
	return iv
}
