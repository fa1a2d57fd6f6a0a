package manager

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/plughost/plughost/host/override"
	"github.com/plughost/plughost/host/trust"
)

// Overridden is a definition a plugin lists that the operator's override
// blocks change (Options.Overrides), for PluginStatus.Overridden.
type Overridden struct {
	// Kind and Name are as in Held.
	Kind, Name string
	// Members are the members the overrides set ("title", "description",
	// "annotations.NAME").
	Members []string
	// Plugin is the definition as it was before: the plugin's own text,
	// as the pins and the hooks left it.
	Plugin json.RawMessage
	// Served is the definition clients are served.
	Served json.RawMessage
}

// overrideKind is the override kind of a definition of kind (trust's).
func overrideKind(kind string) string {
	switch kind {
	case trust.KindPrompt:
		return override.Prompt
	case trust.KindResource, trust.KindTemplate:
		return override.Resource
	}
	return override.Tool
}

// applyOverrides applies Options.Overrides to each definition of defs
// that served serves (by key), in place, and records what they changed
// in the status.
func (s *supervisor) applyOverrides(defs []trust.Definition, served map[string]json.RawMessage) {
	set := s.m.overrides.Load()
	var out []Overridden
	for _, d := range defs {
		key := d.Key()
		raw := served[key]
		if set == nil || raw == nil {
			continue
		}
		got, members := set.Apply(overrideKind(d.Kind), s.name, d.Name, raw)
		if members == nil {
			continue
		}
		served[key] = got
		out = append(out, Overridden{Kind: d.Kind, Name: d.Name, Members: members, Plugin: raw, Served: got})
	}
	slices.SortFunc(out, func(a, b Overridden) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name)) })
	s.update(func(st *PluginStatus) { st.Overridden = out })
}
