package serve

import (
	"slices"
	"testing"

	"github.com/plughost/plughost/host/console"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/sandbox"
)

// The sandbox layers a plugin's start went without are kept per plugin,
// sorted, each with why, and forgotten at a start that had them all.
func TestMissingLayers(t *testing.T) {
	t.Parallel()
	var m missingLayers
	m.set("echo", map[sandbox.Layer]string{"seccomp": "no filter", "landlock": "kernel too old"})
	if got, want := m.of("echo"), []string{"landlock: kernel too old", "seccomp: no filter"}; !slices.Equal(got, want) {
		t.Errorf("missing = %q, want %q", got, want)
	}
	m.set("echo", nil)
	if got := m.of("echo"); got != nil {
		t.Errorf("missing after a full start = %q, want none", got)
	}
}

// The manager's events reach every watcher as the console names them,
// and a stopped watcher hears no more.
func TestPluginEvents(t *testing.T) {
	t.Parallel()
	var e pluginEvents
	var a, b []console.Event
	stopA := e.watch(func(ev console.Event) { a = append(a, ev) })
	e.watch(func(ev console.Event) { b = append(b, ev) })
	e.send(lifeEvent("echo", manager.EventQuarantined))
	stopA()
	e.send(definitionEvent(manager.DefinitionEvent{Plugin: "echo", Held: true, State: manager.DefChanged}))
	e.send(definitionEvent(manager.DefinitionEvent{Plugin: "echo", State: manager.DefApproved}))
	if want := []console.Event{{Plugin: "echo", Kind: "quarantined"}}; !slices.Equal(a, want) {
		t.Errorf("stopped watcher got %v, want %v", a, want)
	}
	want := []console.Event{{Plugin: "echo", Kind: "quarantined"}, {Plugin: "echo", Kind: "held"}, {Plugin: "echo", Kind: "approved"}}
	if !slices.Equal(b, want) {
		t.Errorf("watcher got %v, want %v", b, want)
	}
}

// A plugin's requests are one grant a line.
func TestRequestLines(t *testing.T) {
	t.Parallel()
	got := requestLines(pluginproto.Requests{Read: []string{"/srv/a"}, Net: []string{"api.example.com:443", "*"}, Env: []string{"TOKEN"}})
	want := []string{"read: /srv/a", "net: api.example.com:443", "net: *", "env: TOKEN"}
	if !slices.Equal(got, want) {
		t.Errorf("requestLines = %q, want %q", got, want)
	}
}
