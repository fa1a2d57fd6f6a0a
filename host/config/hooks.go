package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/plughost/plughost/host/access"
	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/tool"
)

// The hooks block: guardrail plugins asked around every call, read and
// prompt get, and about every definition, in the order written (package
// hooks runs them; docs/operators.md "Guardrails (hooks)" teaches them).
//
//	hooks {
//	  hook "secrets" {
//	    plugin   = "secrets"                      # the plugin that serves it
//	    on       = ["before_call", "after_call"]  # tool.HookPoints
//	    match    = "item.plugin != 'vault'"       # CEL over caller, item and arguments; default: every request
//	    mode     = "enforce"                      # "enforce" | "permissive" (log and audit only) | "off"
//	    on_error = "refuse"                       # when it fails or times out: "refuse" | "pass"
//	    timeout  = "200ms"
//	  }
//	}

// Hook is one hook block.
type Hook struct {
	// Name is the block's label: unique, named in refusals, metrics and
	// the audit log.
	Name string
	// Plugin is the provider name of the plugin that serves it.
	Plugin string
	// On are the hook points it runs at (tool.HookPoint values), at least one.
	On []string
	// Match is the CEL expression over caller and item that selects the
	// requests it sees; "" for every one. It compiled when the file was read.
	Match string
	// Mode is "enforce" (default), "permissive" or "off".
	Mode string
	// OnError is "refuse" (default) or "pass".
	OnError string
	// Timeout bounds each question (default 200ms).
	Timeout time.Duration
}

// The hook modes and on_error values.
const (
	HookEnforce    = "enforce"
	HookPermissive = "permissive"
	HookOff        = "off"

	HookOnErrorRefuse = "refuse"
	HookOnErrorPass   = "pass"
)

// The bounds of a hook block (the error messages spell them): a question
// needs at least a millisecond to cross a socket, and a guardrail slower
// than a minute is a job, not a check; a request runs every hook of its
// point in turn, so the hooks are few.
const (
	DefaultHookTimeout = 200 * time.Millisecond
	minHookTimeout     = time.Millisecond
	maxHookTimeout     = time.Minute
	maxHooks           = 64
)

var (
	hooksSchema = hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "hook", LabelNames: []string{"name"}}}}
	hookSchema  = hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "plugin", Required: true}, {Name: "on", Required: true},
		{Name: "match"}, {Name: "mode"}, {Name: "on_error"}, {Name: "timeout"}}}
)

// decodeHooks reads the hooks block: each hook's settings checked, its
// match compiled in the access rules' CEL environment (package access),
// the defaults filled in.
func decodeHooks(body hcl.Body) ([]Hook, error) {
	content, diags := body.Content(&hooksSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	if len(content.Blocks) > maxHooks {
		return nil, diag(content.Blocks[maxHooks].DefRange, "Too many hooks", fmt.Sprintf("the hooks block may hold at most %d hooks", maxHooks))
	}
	hooks := []Hook{}
	seen := map[string]bool{}
	for _, b := range content.Blocks {
		name := b.Labels[0]
		if !naming.ValidProvider(name) {
			return nil, diag(b.LabelRanges[0], "Invalid hook name", fmt.Sprintf("hook %q: a hook's name is 1 to %d of a-z, A-Z, 0-9, _ and - (refusals, metrics and the audit log name it)", name, naming.MaxProvider))
		}
		if seen[name] {
			return nil, diag(b.LabelRanges[0], "Duplicate hook", "two hooks are named "+name+": refusals, metrics and the audit log name a hook, so names must be unique")
		}
		seen[name] = true
		h, err := decodeHook(name, b.Body)
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, h)
	}
	return hooks, nil
}

// decodeHook reads one hook block.
func decodeHook(name string, body hcl.Body) (Hook, error) {
	h := Hook{Name: name, Mode: HookEnforce, OnError: HookOnErrorRefuse, Timeout: DefaultHookTimeout}
	_, err := attributes(body, &hookSchema, func(attr string, a *hcl.Attribute, v cty.Value) (err error) {
		switch attr {
		case "plugin":
			if v.Type() != cty.String || !naming.ValidProvider(v.AsString()) {
				return diag(a.Expr.Range(), "Invalid plugin", fmt.Sprintf("hook %q: plugin must be the provider name of the plugin that serves the hook, as `plughost plugins` shows it", name))
			}
			h.Plugin = v.AsString()
		case "on":
			h.On, err = hookPoints(name, a, v)
		case "match":
			if v.Type() != cty.String {
				return diag(a.Expr.Range(), "Invalid match", fmt.Sprintf("hook %q: match must be a CEL expression in a string", name))
			}
			h.Match = v.AsString()
			err = compileMatch(name, a, h.Match)
		case "mode":
			h.Mode, err = oneOf(name, a, v, HookEnforce, HookPermissive, HookOff)
		case "on_error":
			h.OnError, err = oneOf(name, a, v, HookOnErrorRefuse, HookOnErrorPass)
		case "timeout":
			h.Timeout, err = durationIn(a, v, minHookTimeout, maxHookTimeout, "1ms to 1m")
		}
		return err
	})
	return h, err
}

// hookPoints reads on: a list of distinct hook points, at least one.
func hookPoints(name string, a *hcl.Attribute, v cty.Value) ([]string, error) {
	known := make([]string, len(tool.HookPoints))
	for i, p := range tool.HookPoints {
		known[i] = string(p)
	}
	want := fmt.Sprintf("hook %q: on must be a list of hook points, at least one, of %s", name, strings.Join(known, ", "))
	points, ok := stringList(v)
	if !ok || len(points) == 0 {
		return nil, diag(a.Expr.Range(), "Invalid on", want)
	}
	for i, p := range points {
		if !slices.Contains(known, p) {
			return nil, diag(a.Expr.Range(), "Invalid on", fmt.Sprintf("%s; not %q", want, p))
		}
		if slices.Contains(points[:i], p) {
			return nil, diag(a.Expr.Range(), "Invalid on", fmt.Sprintf("hook %q: on names %q twice", name, p))
		}
	}
	return points, nil
}

// oneOf reads a string that must be one of values.
func oneOf(name string, a *hcl.Attribute, v cty.Value, values ...string) (string, error) {
	if v.Type() == cty.String && slices.Contains(values, v.AsString()) {
		return v.AsString(), nil
	}
	quoted := make([]string, len(values))
	for i, s := range values {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return "", diag(a.Expr.Range(), "Invalid "+a.Name, fmt.Sprintf("hook %q: %s must be one of %s", name, a.Name, strings.Join(quoted, ", ")))
}

// compileMatch compiles a hook's match, so that a mistake in it is the
// file's error, at its line and column.
func compileMatch(name string, a *hcl.Attribute, expr string) error {
	rng := a.Expr.Range()
	line, col := exprStart(a)
	if _, err := access.CompileMatch(access.Source{Name: "hook " + name, Expr: expr, File: rng.Filename, Line: line, Column: col}); err != nil {
		return diag(rng, "Invalid match", err.Error())
	}
	return nil
}
