package serve

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/console"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/tasks"
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

// Tasks shows an id prefix, and names a task's caller when a session of
// theirs is open (the record keeps only a digest), else a key prefix.
func TestConsoleTasksCaller(t *testing.T) {
	t.Parallel()
	mem := tasks.NewMemory(tasks.MemoryOptions{})
	svc := tasks.New(tasks.Options{Store: mem, Replica: "r1"})
	t.Cleanup(func() { svc.Close() })
	cat := catalog.New(&catalog.Options{})
	t.Cleanup(cat.Close)
	srv := mcp.NewServer(cat, nil)
	alice := mcp.Caller{Subject: "alice", Issuer: "https://id.example"}
	sess := srv.OpenSession(mcp.SessionConn{Notify: discardSink{}, Peer: mcp.Peer{Caller: alice, Transport: "streamable-http"}})
	t.Cleanup(sess.Close)
	now := time.Now()
	for id, caller := range map[string]string{"0123456789abcdef-alice": mcp.CallerKey(&alice), "fedcba9876543210-bob": mcp.CallerKey(&mcp.Caller{Subject: "bob"})} {
		if err := mem.Create(t.Context(), &tasks.Task{ID: id, Status: tasks.Working, Created: now, Updated: now, TTL: time.Hour, Tool: "echo", Caller: caller, Owner: "r1"}); err != nil {
			t.Fatal(err)
		}
	}
	h := &Host{tasks: svc}
	h.reloads.servers = []*mcp.Server{srv}
	got, err := (&consoleSource{h}).Tasks(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	callers := map[string]string{}
	for _, task := range got {
		callers[task.ID] = task.Caller
	}
	bobKey := mcp.CallerKey(&mcp.Caller{Subject: "bob"})
	if want := map[string]string{"01234567": "alice", "fedcba98": "key " + bobKey[:8]}; !maps.Equal(callers, want) {
		t.Errorf("tasks' callers = %v, want %v", callers, want)
	}
}
