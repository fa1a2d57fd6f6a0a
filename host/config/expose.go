package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/plughost/plughost/host/expose"
)

// pluginSchema is a plugins { plugin "NAME" { } } block: its start and
// idle_timeout, and what of it reaches clients,
//
//	plugin "github" {
//	  tools {
//	    allow = ["search_*"]
//	    deny  = ["delete_*"]
//	  }
//	  prompts   { deny = ["*"] }
//	  resources { allow = ["repo://docs/*"] }   # URIs, and templates' URI templates
//	}
//
// (package expose says how the patterns match).
var pluginSchema = hcl.BodySchema{
	Attributes: startSchema.Attributes,
	Blocks:     []hcl.BlockHeaderSchema{{Type: "tools"}, {Type: "prompts"}, {Type: "resources"}},
}

var exposeListSchema = hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "allow"}, {Name: "deny"}}}

// decodeExpose reads a plugin block's tools, prompts and resources blocks.
func decodeExpose(blocks hcl.Blocks) (*expose.Rules, error) {
	r := &expose.Rules{}
	seen := map[string]bool{}
	for _, b := range blocks {
		if seen[b.Type] {
			return nil, diag(b.DefRange, "Duplicate "+b.Type+" block", "a plugin block has at most one "+b.Type+" block")
		}
		seen[b.Type] = true
		content, diags := b.Body.Content(&exposeListSchema)
		if diags.HasErrors() {
			return nil, diags
		}
		var lists [2][]string
		for i, name := range []string{"allow", "deny"} {
			a, ok := content.Attributes[name]
			if !ok {
				continue
			}
			var err error
			if lists[i], err = patterns(a); err != nil {
				return nil, err
			}
		}
		l, err := expose.Compile(lists[0], lists[1])
		if err != nil {
			return nil, diag(b.DefRange, "Invalid "+b.Type+" pattern", err.Error())
		}
		switch b.Type {
		case "tools":
			r.Tools = l
		case "prompts":
			r.Prompts = l
		case "resources":
			r.Resources = l
		}
	}
	return r, nil
}

// patterns reads a list of non-empty strings.
func patterns(a *hcl.Attribute) ([]string, error) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return nil, diags
	}
	want := fmt.Sprintf(`%s must be a list of patterns such as ["search_*", "get_issue"]`, a.Name)
	if v.IsNull() || !v.IsKnown() || !(v.Type().IsListType() || v.Type().IsTupleType()) {
		return nil, diag(a.Expr.Range(), "Invalid "+a.Name, want)
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || !e.IsKnown() || e.Type() != cty.String || e.AsString() == "" {
			return nil, diag(a.Expr.Range(), "Invalid "+a.Name, want+"; none may be empty")
		}
		out = append(out, e.AsString())
	}
	return out, nil
}
