package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/plughost/plughost/host/naming"
)

// The override blocks: the operator's title, description and annotations
// for a plugin's tool, prompt or resource, without code (package override
// applies them; docs/operators.md "Overrides" teaches them).
//
//	override "search_issues" {
//	  plugin      = "github"          # only that plugin's (default: whichever offers it)
//	  description = "Searches the issues of our repositories."
//	  annotations { readOnlyHint = true }
//	}
//	override "docs://handbook" {
//	  kind  = "resource"              # "tool" (default) | "prompt" | "resource": the label is then a URI (or URI template)
//	  title = "Handbook"
//	}

// Override is one override block.
type Override struct {
	// Name is the block's label: the tool's or prompt's own name (as its
	// plugin lists it), or a resource's URI or a template's URI template.
	Name string
	// Kind is OverrideTool, OverridePrompt or OverrideResource.
	Kind string
	// Plugin, when not "", is the provider name of the only plugin whose
	// item it overrides.
	Plugin string
	// Title and Description replace the definition's; nil: kept.
	Title, Description *string
	// Annotations are set in the definition's annotations object, each
	// replacing the plugin's of that name (JSON values: bool, string,
	// float64, []string); nil: none.
	Annotations map[string]any
}

// The kinds of Override.
const (
	OverrideTool     = "tool"
	OverridePrompt   = "prompt"
	OverrideResource = "resource"
)

// Bounds of an override's texts, in bytes: a title is a line, a
// description a tool's description.
const (
	maxOverrideTitle       = 256
	maxOverrideDescription = 16 << 10
)

// overrideAnnotations are, by kind, the annotations an override may set
// (the MCP Tool's ToolAnnotations, a resource's Annotations) and what each
// holds; prompts have none.
var overrideAnnotations = map[string]map[string]string{
	OverrideTool: {"title": "string", "readOnlyHint": "bool", "destructiveHint": "bool", "idempotentHint": "bool",
		"openWorldHint": "bool"},
	OverrideResource: {"audience": "audience", "priority": "priority", "lastModified": "time"},
}

var overrideSchema = hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "kind"}, {Name: "plugin"}, {Name: "title"}, {Name: "description"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "annotations"}},
}

// decodeOverride reads one override block.
func decodeOverride(b *hcl.Block) (Override, error) {
	o := Override{Name: b.Labels[0], Kind: OverrideTool}
	content, err := attributes(b.Body, &overrideSchema, func(name string, a *hcl.Attribute, v cty.Value) (err error) {
		bad := func(why string) error { return diag(a.Expr.Range(), "Invalid "+name, why) }
		if v.Type() != cty.String {
			return bad(name + " must be a string")
		}
		s := v.AsString()
		switch name {
		case "kind":
			if !slices.Contains([]string{OverrideTool, OverridePrompt, OverrideResource}, s) {
				return bad(fmt.Sprintf(`kind must be "tool", "prompt" or "resource", not %q`, s))
			}
			o.Kind = s
		case "plugin":
			if err := naming.CheckProvider(s); err != nil {
				return bad(err.Error())
			}
			o.Plugin = s
		case "title":
			if s == "" || len(s) > maxOverrideTitle || strings.ContainsAny(s, "\r\n") {
				return bad(fmt.Sprintf("title must be one line of 1 to %d bytes", maxOverrideTitle))
			}
			o.Title = &s
		case "description":
			if len(s) > maxOverrideDescription {
				return bad(fmt.Sprintf("description must be at most %d bytes, not %d", maxOverrideDescription, len(s)))
			}
			o.Description = &s
		}
		return nil
	})
	if err != nil {
		return o, err
	}
	label := b.LabelRanges[0]
	switch {
	case o.Name == "" || !utf8.ValidString(o.Name) || len(o.Name) > 2048:
		return o, diag(label, "Invalid override", "the label names the overridden item: a tool's or prompt's name, or a resource's URI")
	case o.Kind != OverrideResource && strings.Contains(o.Name, "://"):
		return o, diag(label, "Invalid override", fmt.Sprintf(`%q looks like a URI: a resource's override says kind = "resource"`, o.Name))
	}
	for _, ab := range content.Blocks {
		if o.Annotations != nil {
			return o, diag(ab.DefRange, "Duplicate annotations block", "an override may have one annotations block")
		}
		if o.Annotations, err = decodeAnnotations(ab, o.Kind); err != nil {
			return o, err
		}
	}
	if o.Title == nil && o.Description == nil && o.Annotations == nil {
		return o, diag(b.DefRange, "Empty override", fmt.Sprintf("override %q sets nothing: give it a title, a description or an annotations block", o.Name))
	}
	return o, nil
}

// decodeAnnotations reads an override's annotations block for an item of
// kind.
func decodeAnnotations(b *hcl.Block, kind string) (map[string]any, error) {
	known := overrideAnnotations[kind]
	if known == nil {
		return nil, diag(b.DefRange, "Invalid annotations", "a "+kind+" has no annotations")
	}
	attrs, diags := b.Body.JustAttributes()
	if diags.HasErrors() {
		return nil, diags
	}
	out := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		a := attrs[name]
		bad := func(why string) error { return diag(a.Range, "Invalid annotation", why) }
		want, ok := known[name]
		if !ok {
			return nil, bad(fmt.Sprintf("a %s's annotations are %s, not %q", kind, strings.Join(slices.Sorted(maps.Keys(known)), ", "), name))
		}
		v, err := value(a)
		if err != nil {
			return nil, err
		}
		switch want {
		case "bool":
			if v.Type() != cty.Bool {
				return nil, bad(name + " must be true or false")
			}
			out[name] = v.True()
		case "string":
			if v.Type() != cty.String || len(v.AsString()) > maxOverrideTitle {
				return nil, bad(fmt.Sprintf("%s must be a string of at most %d bytes", name, maxOverrideTitle))
			}
			out[name] = v.AsString()
		case "priority":
			if v.Type() != cty.Number {
				return nil, bad("priority must be a number from 0 to 1")
			}
			p, _ := v.AsBigFloat().Float64()
			if p < 0 || p > 1 {
				return nil, bad("priority must be a number from 0 to 1")
			}
			out[name] = p
		case "time":
			if v.Type() != cty.String {
				return nil, bad(name + " must be an RFC 3339 time string")
			}
			if _, err := time.Parse(time.RFC3339, v.AsString()); err != nil {
				return nil, bad(fmt.Sprintf("%s must be an RFC 3339 time such as \"2026-01-02T15:04:05Z\", not %q", name, v.AsString()))
			}
			out[name] = v.AsString()
		case "audience":
			var roles []string
			if v.Type().IsTupleType() || v.Type().IsListType() {
				for it := v.ElementIterator(); it.Next(); {
					_, e := it.Element()
					if e.Type() != cty.String || (e.AsString() != "user" && e.AsString() != "assistant") || slices.Contains(roles, e.AsString()) {
						return nil, bad(`audience must be a list of "user" and "assistant", each once`)
					}
					roles = append(roles, e.AsString())
				}
			} else {
				return nil, bad(`audience must be a list of "user" and "assistant", each once`)
			}
			out[name] = roles
		}
	}
	return out, nil
}

// addOverride reads the override block b into c.Overrides, refusing a
// second block for the same item.
func (c *Config) addOverride(b *hcl.Block) error {
	o, err := decodeOverride(b)
	if err == nil {
		err = duplicateOverride(c.Overrides, o, b.DefRange)
	}
	if err == nil {
		c.Overrides = append(c.Overrides, o)
	}
	return err
}

// duplicateOverride refuses o, at r, when an earlier override block of
// prev is of the same item (kind, label and plugin): which one would win
// would be a guess.
func duplicateOverride(prev []Override, o Override, r hcl.Range) error {
	for _, p := range prev {
		if p.Kind == o.Kind && p.Name == o.Name && p.Plugin == o.Plugin {
			of := ""
			if o.Plugin != "" {
				of = " of plugin " + o.Plugin
			}
			return diag(r, "Duplicate override", fmt.Sprintf("another override block is of %s %q%s: merge them into one", o.Kind, o.Name, of))
		}
	}
	return nil
}
