package manager

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/trust"
)

// Definitions pinned: what a plugin lists is compared with what was
// approved before it is published (see the package documentation,
// "Definitions pinned").

// Held is a definition a plugin lists that clients are not served as
// listed: in mode pinned or signed, one changed since it was approved, or
// one never approved.
type Held struct {
	// Kind is "tool", "prompt", "resource" or "resource template"; Name
	// its name, URI or URI template.
	Kind, Name string
	// State is DefChanged (clients are served Approved, and its calls are
	// refused; when only its pin was approved it is not served at all),
	// DefPending (never approved: not served) or DefFlagged (a hook held
	// it back: not served, its requests refused with Reason).
	State DefState
	// Approved is the definition as approved; nil when pending, or when
	// only its pin was recorded.
	Approved json.RawMessage
	// Listed is the definition as the plugin lists it now.
	Listed json.RawMessage
	// Reason is why a hook held it back (DefFlagged): its refusal text,
	// naming the hook.
	Reason string
}

// DefState is what became of a definition, for Held and DefinitionEvent.
type DefState string

// The states of a definition.
const (
	// DefPending: listed, never approved; held back.
	DefPending DefState = "pending"
	// DefChanged: listed otherwise than approved; held back in mode pinned
	// or signed, served (and logged) in mode open.
	DefChanged DefState = "changed"
	// DefApproved: a definition held back before is served now (it was
	// approved, or the plugin lists the approved one again).
	DefApproved DefState = "approved"
	// DefFlagged and DefCleared: screening.go.
)

// DefinitionEvent is a change of a definition's state, for
// Options.OnDefinition (the audit log).
type DefinitionEvent struct {
	Time   time.Time
	Plugin string
	// Digest is the plugin file's ("sha256:…"), when its trust was checked.
	Digest     string
	Kind, Name string
	State      DefState
	// Held says that clients are not served the definition as listed.
	Held bool
	// Reason is why a hook held it back (DefFlagged).
	Reason string
	// Pin is the listed definition's fingerprint, ApprovedPin the one it
	// is compared with (empty for a pending one).
	Pin, ApprovedPin string
	// Diff is trust.DiffFields of the approved and the listed definition:
	// a line per member that differs.
	Diff []string
	// Listed is everything the plugin lists now, and HeldNow what of it
	// is held back after this change (as PluginStatus.Held): what a
	// caller needs to show the plugin's holds elsewhere (plughost keeps
	// them beside the trust file for plughost plugins --diff and
	// plughost approve) without asking the manager.
	Listed  []trust.Definition
	HeldNow []Held
}

// pinState is what a supervisor remembers of its plugin's definitions.
// Only the goroutine that publishes for the supervisor touches it (spawn's
// before run starts, run's after).
type pinState struct {
	// compare rules on each listing (its baseline is of the binary
	// last listed).
	compare trust.Comparer
	// held is what was held back when last published, by key.
	held map[string]Held
	// pending are the changes of state not yet announced (announceDefs).
	pending []DefinitionEvent
}

// definitions is what ls offers, as package trust names it.
func definitions(ls lists) []trust.Definition {
	out := []trust.Definition{} // not nil: listed, if nothing
	for _, d := range ls.tools {
		out = append(out, trust.Definition{Kind: trust.KindTool, Name: d.Name, JSON: d.JSON})
	}
	for _, d := range ls.prompts {
		out = append(out, trust.Definition{Kind: trust.KindPrompt, Name: d.Name, JSON: d.JSON})
	}
	for _, d := range ls.resources {
		out = append(out, trust.Definition{Kind: trust.KindResource, Name: d.URI, JSON: d.JSON})
	}
	for _, d := range ls.templates {
		out = append(out, trust.Definition{Kind: trust.KindTemplate, Name: d.URITemplate, JSON: d.JSON})
	}
	return out
}

// vet decides what of ls clients are served, by the rulings of package
// trust (trust.Comparer) under the plugin's last trust check: it returns
// the lists to publish and, by key, the refusal of each held definition
// that is served in its approved form (its calls fail with it). It
// records what ls offers (Manager.Definitions) and what is held
// (PluginStatus.Held), and each change of state, which the caller
// announces (announceDefs) once it has published the lists.
func (s *supervisor) vet(ls lists) (lists, map[string]string) {
	defs := definitions(ls)
	s.mu.Lock()
	v := s.st.Trust
	s.listed = defs
	s.mu.Unlock()

	rulings, first := s.pins.compare.Compare(v, defs)
	holds := v.Mode.HoldsDefinitions()
	if first && holds {
		s.log.Info("no definitions are approved for this binary: its first listing is what later ones are held to "+
			"(plughost approve pins them)", "definitions", len(defs))
	}

	held := map[string]Held{}
	refusals := map[string]string{}
	served := make(map[string]json.RawMessage, len(rulings))
	listed := make(map[string]trust.Definition, len(rulings))
	for _, r := range rulings {
		d, key := r.Definition, r.Definition.Key()
		served[key], listed[key] = r.Served, d
		switch {
		case !r.Held:
		case r.Status == trust.DefChanged:
			held[key] = Held{Kind: d.Kind, Name: d.Name, State: DefChanged, Approved: r.Approved.Definition, Listed: d.JSON}
			refusals[key] = fmt.Sprintf("%s %s of plugin %s changed since it was approved; held until `plughost approve %s` (plughost plugins --diff %s)",
				d.Kind, d.Name, s.name, s.name, s.name)
		default:
			held[key] = Held{Kind: d.Kind, Name: d.Name, State: DefPending, Listed: d.JSON}
			refusals[key] = fmt.Sprintf("%s %s of plugin %s is new since its approval; held until `plughost approve %s` (plughost plugins --diff %s)",
				d.Kind, d.Name, s.name, s.name, s.name)
		}
	}
	// What the pins serve is asked of the hooks (screening.go).
	for key, sc := range s.screenDefs(s.ctx, defs, served) {
		served[key] = sc.served
		if sc.reason == "" {
			continue
		}
		d := listed[key]
		held[key] = Held{Kind: d.Kind, Name: d.Name, State: DefFlagged, Reason: sc.reason, Listed: d.JSON}
		refusals[key] = flaggedRefusal(s.name, d, sc.reason)
	}
	// What clients are served then carries the operator's overrides
	// (overrides.go): the pins and the hooks judged the plugin's text.
	s.applyOverrides(defs, served)
	// A definition not served (nil) is withheld: a call of it gets its
	// refusal (WithheldTool).
	keep := func(kind, name string) json.RawMessage { return served[trust.Definition{Kind: kind, Name: name}.Key()] }
	out := ls
	out.tools = filterDefs(ls.tools, func(d tool.Def) (tool.Def, bool) {
		d.JSON = keep(trust.KindTool, d.Name)
		return d, d.JSON != nil
	})
	out.prompts = filterDefs(ls.prompts, func(d tool.Prompt) (tool.Prompt, bool) {
		d.JSON = keep(trust.KindPrompt, d.Name)
		return d, d.JSON != nil
	})
	out.resources = filterDefs(ls.resources, func(d tool.Resource) (tool.Resource, bool) {
		d.JSON = keep(trust.KindResource, d.URI)
		return d, d.JSON != nil
	})
	out.templates = filterDefs(ls.templates, func(d tool.Template) (tool.Template, bool) {
		d.JSON = keep(trust.KindTemplate, d.URITemplate)
		return d, d.JSON != nil
	})

	before := s.pins.held
	s.pins.held = held
	hs := s.setHeld(held)
	for _, r := range rulings {
		key := r.Definition.Key()
		h, now := held[key]
		was, heldBefore := before[key]
		switch {
		case now && (!heldBefore || !slices.Equal(was.Listed, h.Listed) || was.State != h.State || was.Reason != h.Reason):
			s.defEvent(v, r, h, defs, hs)
		case !now && heldBefore && was.State == DefFlagged:
			s.defEvent(v, r, Held{State: DefCleared}, defs, hs)
		case !now && heldBefore:
			s.defEvent(v, r, Held{State: DefApproved}, defs, hs)
		case !now && !holds && r.Status == trust.DefChanged:
			s.defEvent(v, r, Held{State: DefChanged}, defs, hs) // served as listed: mode open
		}
	}
	return out, refusals
}

// filterDefs maps each definition of in through f, keeping those it keeps.
func filterDefs[T any](in []T, f func(T) (T, bool)) []T {
	out := make([]T, 0, len(in))
	for _, d := range in {
		if d, ok := f(d); ok {
			out = append(out, d)
		}
	}
	return out
}

// setHeld records what is held in the status, sorted by kind and name,
// and returns it so.
func (s *supervisor) setHeld(held map[string]Held) []Held {
	var hs []Held
	for _, h := range held {
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(a, b Held) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name)) })
	s.update(func(st *PluginStatus) { st.Held = hs })
	return hs
}

// defEvent records a definition's change of state, for announceDefs to
// tell once the publication it goes with is made: a log line or an
// audit line that says a definition is held is true when it is read.
// h is its state now: held back when h.Kind is set (as in vet's held).
func (s *supervisor) defEvent(v trust.Verdict, r trust.Ruling, h Held, listed []trust.Definition, heldNow []Held) {
	d := r.Definition
	e := DefinitionEvent{Time: time.Now().UTC(), Plugin: s.name, Digest: v.Digest, Kind: d.Kind, Name: d.Name,
		State: h.State, Held: h.Kind != "", Reason: h.Reason, Pin: r.Pin, ApprovedPin: r.Approved.Pin, Listed: listed, HeldNow: heldNow}
	if r.Approved.Definition != nil && (h.State == DefChanged || h.State == DefPending) {
		e.Diff = trust.DiffFields(d.Kind, r.Approved.Definition, d.JSON)
	}
	s.pins.pending = append(s.pins.pending, e)
}

// announceDefs logs the changes defEvent recorded (WARN for a change or a
// hold, with the word diff; INFO for a definition served again) and hands
// them to Options.OnDefinition.
func (s *supervisor) announceDefs() {
	for _, e := range s.pins.pending {
		log := s.log.With("kind", e.Kind, "name", e.Name, "state", e.State)
		switch {
		case e.State == DefApproved:
			log.Info("definition served again: it is the approved one")
		case e.State == DefCleared:
			log.Info("definition served again: the hooks pass it now")
		case e.State == DefFlagged:
			log.Warn("definition held back: a hook flagged it; not served, its requests refused (plughost plugins)", "reason", e.Reason)
		case e.Held && e.State == DefPending:
			log.Warn("definition held back: never approved; not served (plughost approve " + s.name + ")")
		case e.Held:
			log.Warn("definition held back: changed since it was approved; clients keep the approved one and its calls are refused "+
				"(plughost plugins --diff "+s.name+")", "diff", diffText(e.Diff))
		default:
			log.Warn("definition changed; served (trust mode open)", "diff", diffText(e.Diff))
		}
		if f := s.m.opts.OnDefinition; f != nil {
			f(e)
		}
	}
	s.pins.pending = nil
}

// diffText is a diff's lines in one string, for a log line.
func diffText(lines []string) string {
	if len(lines) == 0 {
		return "(no member differs)"
	}
	return strings.Join(lines, "; ")
}

// WithheldTool says why p does not list its tool name, when it holds it
// back (tool.Withholder): the catalog answers a call of it with this
// rather than "unknown tool".
func (p *provider) WithheldTool(name string) string {
	return p.held[trust.Definition{Kind: trust.KindTool, Name: name}.Key()]
}

// heldError is the refusal of a request for a held definition of
// provider p ("" when it is not held).
func (p *provider) heldError(kind, name string) error {
	key := trust.Definition{Kind: kind, Name: name}.Key()
	if msg, ok := p.held[key]; ok {
		return tool.Errorf(tool.ErrRefused, "%s", msg)
	}
	return nil
}

// Definitions returns what the named plugin offers as it last listed it
// (before any is held back), for `plughost approve` to pin; false when
// the plugin has not listed anything (it never ran, or is quarantined).
func (m *Manager) Definitions(name string) ([]trust.Definition, bool) {
	m.mu.Lock()
	s := m.plugins[name]
	m.mu.Unlock()
	if s == nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.listed), s.listed != nil
}
