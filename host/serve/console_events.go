package serve

import (
	"maps"
	"slices"
	"sync"

	"github.com/plughost/plughost/host/console"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/sandbox"
)

// pluginEvents fans the plugins' changes out to the console's watchers
// (console.Source.Watch): the manager's life events (started, crashed,
// parked, quarantined) and its definition events (held, approved), and
// the console's own approvals and revocations. The metrics keep their
// own hook (observer.managerEvent calls both). Its zero value is ready.
type pluginEvents struct {
	mu       sync.Mutex
	next     int
	watchers map[int]func(console.Event)
}

// watch calls changed with every event from now on, until stop is
// called. changed must not block: it runs on the goroutine of the plugin
// that changed (the console's Handler hands each to its streams'
// buffered channels).
func (e *pluginEvents) watch(changed func(console.Event)) (stop func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.watchers == nil {
		e.watchers = map[int]func(console.Event){}
	}
	id := e.next
	e.next++
	e.watchers[id] = changed
	return func() {
		e.mu.Lock()
		delete(e.watchers, id)
		e.mu.Unlock()
	}
}

// send tells every watcher of ev.
func (e *pluginEvents) send(ev console.Event) {
	e.mu.Lock()
	fs := make([]func(console.Event), 0, len(e.watchers))
	for _, f := range e.watchers {
		fs = append(fs, f)
	}
	e.mu.Unlock()
	for _, f := range fs {
		f(ev)
	}
}

// lifeEvent is a manager life event as the console names it.
func lifeEvent(plugin string, e manager.Event) console.Event {
	return console.Event{Plugin: plugin, Kind: string(e)}
}

// definitionEvent is a manager definition event as the console names it:
// "held" when clients are not served the definition as listed,
// "approved" when one held before is served again, "changed" otherwise
// (a change served in mode open).
func definitionEvent(e manager.DefinitionEvent) console.Event {
	kind := "changed"
	switch {
	case e.Held:
		kind = "held"
	case e.State == manager.DefApproved:
		kind = "approved"
	}
	return console.Event{Plugin: e.Plugin, Kind: kind}
}

// missingLayers keeps, per plugin, the sandbox layers its last start
// went without and why ("landlock: the kernel has no Landlock"), for the
// console's plugin page. One entry per plugin name ever started: bounded
// by the plugin directory. Its zero value is ready.
type missingLayers struct {
	mu     sync.Mutex
	plugin map[string][]string
}

// set records the layers plugin's start went without (none: forgets).
func (m *missingLayers) set(plugin string, missing map[sandbox.Layer]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(missing) == 0 {
		delete(m.plugin, plugin)
		return
	}
	if m.plugin == nil {
		m.plugin = map[string][]string{}
	}
	lines := make([]string, 0, len(missing))
	for _, l := range slices.Sorted(maps.Keys(missing)) {
		lines = append(lines, string(l)+": "+missing[l])
	}
	m.plugin[plugin] = lines
}

// of returns the layers plugin's last start went without.
func (m *missingLayers) of(plugin string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.plugin[plugin]
}
