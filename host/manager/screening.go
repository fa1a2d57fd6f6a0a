package manager

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/trust"
)

// Definitions screened (see the package documentation): each definition
// the pins let through is asked of the operator's hooks at
// tool.OnDefinitions (Options.Hooks) before it is published. A hook may
// pass it, rewrite it (it is served rewritten) or hide it: it is then
// held back as a changed pinned one is, in state DefFlagged with the
// hook's reason, and a request for it is refused with that reason.

// The states of a screened definition.
const (
	// DefFlagged: a hook hid it, or failed under on_error = "refuse";
	// held back: not served, its requests refused with Held.Reason.
	DefFlagged DefState = "flagged"
	// DefCleared: a definition a hook held back before is served now.
	DefCleared DefState = "cleared"
)

// HookServers is what Options.Hooks may implement besides tool.Hooks
// (host/hooks' Chain does): the plugins that serve its hooks. When one of
// them becomes ready (loaded, restarted, reloaded, woken) every other
// plugin's definitions are asked again, so that one screened while its
// hook could not answer (it was starting) is not left held, or passed,
// by its on_error. Hooks that do not implement it make every plugin that
// becomes ready count as a hook plugin.
type HookServers interface {
	Plugins() []string
}

// screenParallel bounds the questions one plugin's listing asks at once;
// each is bounded by the hooks' own timeouts.
const screenParallel = 8

// screened is what came of asking the hooks about one definition.
type screened struct {
	// served is what clients are served (the hooks' rewrite, or the
	// definition asked about); nil when held back.
	served json.RawMessage
	// reason says why it is held back (a hook's refusal text).
	reason string
}

// screenDefs asks Options.Hooks about each definition of served (by
// key; nil ones are not served, and not asked) and returns, by key, what
// to serve and why what is held back is. Nothing is asked when no hook
// runs at OnDefinitions.
func (s *supervisor) screenDefs(ctx context.Context, defs []trust.Definition, served map[string]json.RawMessage) map[string]screened {
	h := s.m.opts.Hooks
	if h == nil || !h.Has(tool.OnDefinitions) {
		return nil
	}
	out := make(map[string]screened, len(defs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, screenParallel)
	for _, d := range defs {
		key := d.Key()
		raw := served[key]
		if raw == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := s.screenOne(ctx, h, d, raw)
			mu.Lock()
			out[key] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// screenOne asks the hooks about one definition, raw as the pins serve it.
func (s *supervisor) screenOne(ctx context.Context, h tool.Hooks, d trust.Definition, raw json.RawMessage) screened {
	q := &tool.HookCall{Point: tool.OnDefinitions, Item: hookItem(s.name, d), Definition: raw}
	got, err := h.Apply(ctx, q)
	if err != nil {
		if !errors.Is(err, tool.ErrRefused) {
			err = fmt.Errorf("the hooks could not screen it: %w", err)
		}
		return screened{reason: err.Error()}
	}
	if got == nil {
		return screened{served: raw}
	}
	if !sameKey(d, got) {
		return screened{reason: fmt.Sprintf("a hook rewrote it into something else than a %s of that %s", d.Kind, keyMember(d.Kind))}
	}
	// A rewrite is bounded as a listed definition is.
	if limit := cmp.Or(s.m.opts.Limits.MaxDefinitionSize, pluginclient.DefaultMaxDefinitionSize); len(got) > limit {
		return screened{reason: fmt.Sprintf("a hook rewrote it into %d bytes, over the limit of a definition (%d bytes; limits { definition_size })", len(got), limit)}
	}
	return screened{served: got}
}

// hookItem is what a hook is told a definition of plugin is. Its Exposed
// is "": the name clients will see is the catalog's choice, made once
// the definition is published.
func hookItem(plugin string, d trust.Definition) tool.Item {
	it := tool.Item{Provider: plugin}
	switch d.Kind {
	case trust.KindTool:
		it.Kind, it.Name = tool.ItemTool, d.Name
	case trust.KindPrompt:
		it.Kind, it.Name = tool.ItemPrompt, d.Name
	case trust.KindResource:
		it.Kind, it.URI = tool.ItemResource, d.Name
	default:
		it.Kind, it.URI = tool.ItemTemplate, d.Name
	}
	var m struct {
		Name        string         `json:"name"`
		Annotations map[string]any `json:"annotations"`
	}
	if json.Unmarshal(d.JSON, &m) == nil {
		it.Annotations = m.Annotations
		if it.Name == "" {
			it.Name = m.Name
		}
	}
	return it
}

// keyMember is the member that names a definition of kind.
func keyMember(kind string) string {
	switch kind {
	case trust.KindResource:
		return "uri"
	case trust.KindTemplate:
		return "uriTemplate"
	}
	return "name"
}

// sameKey reports whether raw is a JSON object naming d as d is named: a
// rewrite may change a definition, not make it another one.
func sameKey(d trust.Definition, raw json.RawMessage) bool {
	k, ok := keyOf(raw, keyMember(d.Kind))
	return ok && k == d.Name
}

// flaggedRefusal is the refusal of a request for a definition a hook held
// back.
func flaggedRefusal(plugin string, d trust.Definition, reason string) string {
	return fmt.Sprintf("%s %s of plugin %s is held back: %s (plughost plugins)", d.Kind, d.Name, plugin, reason)
}

// hookPluginReady asks every other plugin's definitions again once the
// plugin name, when it serves a hook, has become ready (HookServers).
func (m *Manager) hookPluginReady(name string) {
	h := m.opts.Hooks
	if h == nil || !h.Has(tool.OnDefinitions) {
		return
	}
	if hs, ok := h.(HookServers); ok && !slices.Contains(hs.Plugins(), name) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for n, s := range m.plugins {
		if n != name {
			s.trustChanged() // rechecked shows the plugin's listing again, which asks the hooks
		}
	}
}
