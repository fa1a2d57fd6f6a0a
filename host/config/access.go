package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/plughost/plughost/host/access"
)

// The access block: who may list and use which tools, prompts and
// resources, as rules in CEL (package access says what they see and how
// they decide).
//
//	access {
//	  rule "only writers write" {
//	    deny = "item.name == 'files_write' && !('writers' in caller.claims.groups)"
//	  }
//	  rule "everyone reads" {
//	    allow = "has(item.annotations.readOnlyHint) && item.annotations.readOnlyHint"
//	  }
//	}
//
// Each rule has a label and exactly one of allow and deny. The rules
// compile when the file is read: an error names the file, the line and
// the column in the expression.

var accessSchema = hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "rule", LabelNames: []string{"name"}}}}

var ruleSchema = hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "allow"}, {Name: "deny"}}}

// decodeAccess reads the access block and compiles its rules.
func decodeAccess(body hcl.Body) (*access.Rules, error) {
	content, diags := body.Content(&accessSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	var srcs []access.Source
	seen := map[string]bool{}
	for _, b := range content.Blocks {
		name := b.Labels[0]
		if seen[name] {
			return nil, diag(b.LabelRanges[0], "Duplicate rule", "two rules are named "+name+": a refusal names its rule, so names must be unique")
		}
		seen[name] = true
		rc, diags := b.Body.Content(&ruleSchema)
		if diags.HasErrors() {
			return nil, diags
		}
		allow, deny := rc.Attributes["allow"], rc.Attributes["deny"]
		if (allow == nil) == (deny == nil) {
			return nil, diag(b.DefRange, "Invalid rule", `a rule has exactly one of allow = "…" and deny = "…", each a CEL expression`)
		}
		a, isDeny := allow, false
		if deny != nil {
			a, isDeny = deny, true
		}
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return nil, diags
		}
		if v.Type() != cty.String || v.IsNull() {
			return nil, diag(a.Expr.Range(), "Invalid rule", a.Name+" must be a CEL expression in a string")
		}
		rng := a.Expr.Range()
		line, col := exprStart(a)
		srcs = append(srcs, access.Source{Name: name, Deny: isDeny, Expr: v.AsString(), File: rng.Filename, Line: line, Column: col})
	}
	return access.Compile(srcs)
}
