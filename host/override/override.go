// Package override applies the operator's override blocks (host/config's
// Override) to the definitions plugins list: a tool's, prompt's or
// resource's title, description and annotations replaced without code.
//
// The plugin manager applies them to what it serves, after the pins and
// the hooks judged the plugin's own text and before the catalog sees it,
// so that access rules, tool search and every client see the operator's
// text, while the pins keep the plugin's (an override changes nothing a
// plugin is approved for):
//
//	set := override.New(cfg.Overrides)
//	served, changed := set.Apply(override.Tool, "github", "search_issues", def)
//	// changed: ["description", "annotations.readOnlyHint"]
//
// An override names its item by kind and label (a tool's or prompt's own
// name, a resource's URI or a template's URI template), and optionally its
// plugin: one of that plugin is applied after one of any plugin, so its
// members win.
package override

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/plughost/plughost/host/config"
)

// The kinds of definition an override applies to; a template is
// overridden as a resource (its label is the URI template).
const (
	Tool     = config.OverrideTool
	Prompt   = config.OverridePrompt
	Resource = config.OverrideResource
)

// Set is the operator's overrides, by item. A nil *Set overrides nothing.
// It is safe for concurrent use.
type Set struct {
	byItem map[item][]config.Override
}

type item struct{ kind, name string }

// New returns the set of os, in the order written; nil when os is empty.
func New(os []config.Override) *Set {
	if len(os) == 0 {
		return nil
	}
	s := &Set{byItem: map[item][]config.Override{}}
	for _, o := range os {
		k := item{o.Kind, o.Name}
		s.byItem[k] = append(s.byItem[k], o)
	}
	// One of any plugin first, so that one of the plugin itself wins.
	for _, l := range s.byItem {
		slices.SortStableFunc(l, func(a, b config.Override) int {
			return boolInt(a.Plugin != "") - boolInt(b.Plugin != "")
		})
	}
	return s
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Apply returns def, the definition of kind named name (a resource's URI)
// that plugin lists, with the overrides that select it applied, and the
// members they changed ("title", "description", "annotations.NAME"), in
// that order; def itself and nil when none selects it, or when def is no
// JSON object (the catalog refuses it anyway).
func (s *Set) Apply(kind, plugin, name string, def json.RawMessage) (json.RawMessage, []string) {
	if s == nil {
		return def, nil
	}
	var sel []config.Override
	for _, o := range s.byItem[item{kind, name}] {
		if o.Plugin == "" || o.Plugin == plugin {
			sel = append(sel, o)
		}
	}
	if len(sel) == 0 {
		return def, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(def, &m) != nil || m == nil {
		return def, nil
	}
	var changed []string
	set := func(member string, v any) {
		b, _ := json.Marshal(v) // strings, bools, numbers, string lists: cannot fail
		changed = append(changed, member)
		m[member] = b
	}
	for _, o := range sel {
		if o.Title != nil {
			set("title", *o.Title)
		}
		if o.Description != nil {
			set("description", *o.Description)
		}
		if o.Annotations != nil {
			var a map[string]json.RawMessage
			_ = json.Unmarshal(m["annotations"], &a) // none, or not an object: replaced
			if a == nil {
				a = map[string]json.RawMessage{}
			}
			for _, n := range slices.Sorted(maps.Keys(o.Annotations)) {
				a[n], _ = json.Marshal(o.Annotations[n])
				changed = append(changed, "annotations."+n)
			}
			m["annotations"], _ = json.Marshal(a)
		}
	}
	out, err := json.Marshal(m)
	if err != nil { // cannot happen: raw members of an object that parsed
		return def, nil
	}
	return out, dedupe(changed)
}

// dedupe keeps the first of each member.
func dedupe(ms []string) []string {
	var out []string
	for _, m := range ms {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}
