package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/plughost/plughost/host/access"
	"github.com/plughost/plughost/host/ratelimit"
)

// The limits block's caller and rule blocks: per-caller rate limits and
// quotas (issue 35; package ratelimit says what counts and how):
//
//	limits {
//	  caller {                     # every caller, but those a rule matches
//	    rate          = 50         # requests per second (0.01 to 100000; fractions allowed)
//	    burst         = 100        # at once after a quiet spell (1 to 1000000; default: rate, rounded up)
//	    calls_per_day = 10000      # tools/call per UTC day (1 to 1000000000)
//	    tool "files__write" {      # the calls of one tool (its name as clients call it), besides
//	      rate = 1                 # the caller's own limits
//	    }
//	  }
//	  rule "contractors" {         # the first rule whose match holds decides
//	    match = "has(caller.claims.groups) && 'contractors' in caller.claims.groups"
//	    rate  = 5                  # what it leaves unset, the caller block sets
//	  }
//	}
//
// A rule's match is CEL over caller, as the access block's rules see it;
// it compiles when the file is read, and one that reads item or arguments
// is an error at its line.

var (
	callerLimitsSchema = hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "rate"}, {Name: "burst"}, {Name: "calls_per_day"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "tool", LabelNames: []string{"name"}}},
	}
	ruleLimitsSchema = hcl.BodySchema{
		Attributes: append([]hcl.AttributeSchema{{Name: "match", Required: true}}, callerLimitsSchema.Attributes...),
		Blocks:     callerLimitsSchema.Blocks,
	}
	toolLimitsSchema = hcl.BodySchema{Attributes: callerLimitsSchema.Attributes}
)

// decodeRateLimits reads the caller and rule blocks of the limits block;
// nil when it has neither.
func decodeRateLimits(blocks hcl.Blocks) (*ratelimit.Policy, error) {
	if len(blocks) == 0 {
		return nil, nil
	}
	p := &ratelimit.Policy{}
	seen := map[string]bool{}
	callers := 0
	for _, b := range blocks {
		switch b.Type {
		case "caller":
			if callers++; callers > 1 {
				return nil, diag(b.DefRange, "Duplicate caller block", "the limits block may have one caller block")
			}
			if err := decodeCallerLimits(b.Body, &callerLimitsSchema, &p.Caller); err != nil {
				return nil, err
			}
		case "rule":
			name := b.Labels[0]
			if name == ratelimit.CallerRule || seen[name] {
				return nil, diag(b.LabelRanges[0], "Duplicate rule", "two rate limit rules are named "+name+" (or it is \"caller\", the caller block's name): a refusal names its rule, so names must be unique")
			}
			seen[name] = true
			r := ratelimit.Rule{Name: name}
			content, diags := b.Body.Content(&ruleLimitsSchema)
			if diags.HasErrors() {
				return nil, diags
			}
			var err error
			if r.Match, err = compileRateMatch(name, content.Attributes["match"]); err != nil {
				return nil, err
			}
			if err := decodeCallerLimits(b.Body, &ruleLimitsSchema, &r.Limits); err != nil {
				return nil, err
			}
			p.Rules = append(p.Rules, r)
		}
	}
	return p, nil
}

// decodeCallerLimits reads a caller, rule or tool block's limits into l.
func decodeCallerLimits(body hcl.Body, schema *hcl.BodySchema, l *ratelimit.Limits) error {
	content, err := attributes(body, schema, func(name string, a *hcl.Attribute, v cty.Value) (err error) {
		switch name {
		case "rate":
			l.Rate, err = rateIn(a, v)
		case "burst":
			l.Burst, err = wholeIn(a, v, 1, 1_000_000)
		case "calls_per_day":
			l.CallsPerDay, err = wholeIn(a, v, 1, 1_000_000_000)
		}
		return err
	})
	if err != nil {
		return err
	}
	if l.Burst > 0 && l.Rate == 0 && schema != &ruleLimitsSchema { // a rule's burst may be of the caller block's rate
		return diag(content.Attributes["burst"].NameRange, "Invalid burst", "burst is the burst of a rate: set rate too")
	}
	for _, b := range content.Blocks {
		name := b.Labels[0]
		if _, dup := l.Tools[name]; dup {
			return diag(b.LabelRanges[0], "Duplicate tool block", "two tool blocks name "+name)
		}
		var t ratelimit.Limits
		if err := decodeCallerLimits(b.Body, &toolLimitsSchema, &t); err != nil {
			return err
		}
		if l.Tools == nil {
			l.Tools = map[string]ratelimit.Limits{}
		}
		l.Tools[name] = t
	}
	return nil
}

// rateIn reads a rate: requests per second, 0.01 to 100000.
func rateIn(a *hcl.Attribute, v cty.Value) (float64, error) {
	if v.Type() == cty.Number {
		if f, _ := v.AsBigFloat().Float64(); f >= 0.01 && f <= 100_000 {
			return f, nil
		}
	}
	return 0, diag(a.Expr.Range(), "Invalid rate", "rate must be requests per second, a number from 0.01 to 100000")
}

// compileRateMatch compiles a rule's match, so that a mistake in it is
// the file's error, at its line and column.
func compileRateMatch(name string, a *hcl.Attribute) (*access.Match, error) {
	v, err := value(a)
	if err != nil {
		return nil, err
	}
	if v.Type() != cty.String {
		return nil, diag(a.Expr.Range(), "Invalid match", "match must be a CEL expression over caller, in a string")
	}
	rng := a.Expr.Range()
	line, col := exprStart(a)
	m, err := access.CompileMatch(access.Source{Name: "limits " + name, Expr: v.AsString(), File: rng.Filename, Line: line, Column: col})
	if err != nil {
		return nil, diag(rng, "Invalid match", err.Error())
	}
	if !m.CallerOnly() {
		return nil, diag(rng, "Invalid match", fmt.Sprintf("rate limit rule %q: match may read only caller (a request is weighed before its item is known)", name))
	}
	return m, nil
}

// exprStart is the line and column where the text of a's string starts:
// after the opening quote, or on the line after a heredoc's marker. A CEL
// error's position counts from there.
func exprStart(a *hcl.Attribute) (line, col int) {
	rng := a.Expr.Range()
	if t, ok := a.Expr.(*hclsyntax.TemplateExpr); ok && len(t.Parts) > 0 && t.Parts[0].Range().Start.Line > rng.Start.Line {
		return t.Parts[0].Range().Start.Line, t.Parts[0].Range().Start.Column
	}
	return rng.Start.Line, rng.Start.Column + 1
}
