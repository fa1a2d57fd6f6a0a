package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/trust"
)

// fakeHooks is an in-process tool.Hooks with one OnDefinitions hook,
// "scan", served by the plugin hookPlugin: it hides the tool named hide,
// rewrites the description of the tool named rewrite, and passes the
// rest. Until ready it fails as a hook that cannot answer does under
// on_error = "refuse". Like package hooks' chain it never asks a plugin's
// own hook about that plugin's definitions.
type fakeHooks struct {
	hookPlugin    string
	hide, rewrite string
	ready         atomic.Bool

	mu    sync.Mutex
	asked []tool.Item // in the order asked
}

func (f *fakeHooks) Has(p tool.HookPoint) bool { return p == tool.OnDefinitions }

func (f *fakeHooks) Plugins() []string { return []string{f.hookPlugin} }

func (f *fakeHooks) Apply(_ context.Context, q *tool.HookCall) (json.RawMessage, error) {
	if q.Point != tool.OnDefinitions {
		return nil, fmt.Errorf("asked at %s", q.Point)
	}
	if q.Item.Provider == f.hookPlugin {
		return q.Definition, nil
	}
	f.mu.Lock()
	f.asked = append(f.asked, q.Item)
	f.mu.Unlock()
	if !f.ready.Load() {
		return nil, tool.Errorf(tool.ErrRefused, `refused by hook "scan": hook failed: plugin %s is not ready`, f.hookPlugin)
	}
	switch q.Item.Name {
	case f.hide:
		return nil, tool.Errorf(tool.ErrRefused, `refused by hook "scan": hidden instructions in the description`)
	case f.rewrite:
		var m map[string]any
		if err := json.Unmarshal(q.Definition, &m); err != nil {
			return nil, err
		}
		m["description"] = "rewritten by scan"
		return json.Marshal(m)
	}
	return q.Definition, nil
}

func (f *fakeHooks) askedOf(provider string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, it := range f.asked {
		if it.Provider == provider {
			n++
		}
	}
	return n
}

// awaitDef returns the next definition event of name.
func awaitDef(t *testing.T, defs <-chan DefinitionEvent, name string) DefinitionEvent {
	t.Helper()
	deadline := time.After(waitLong)
	for {
		select {
		case e := <-defs:
			if e.Name == name {
				return e
			}
		case <-deadline:
			t.Fatalf("no definition event of %s", name)
		}
	}
}

// TestHooksScreenDefinitions: each definition a plugin lists is asked of
// the hooks before it is published: a hidden one is held back as
// flagged, with the hook's reason, in the status and the definition
// event, and a call of it is refused with that reason; a rewritten one
// is served rewritten; the rest as listed.
func TestHooksScreenDefinitions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	hooks := &fakeHooks{hookPlugin: "guard", hide: "env", rewrite: "pid"}
	hooks.ready.Store(true)
	defs := make(chan DefinitionEvent, 64)
	h := start(t, dir, Options{Hooks: hooks, OnDefinition: func(e DefinitionEvent) { defs <- e }})
	h.ready()
	e := h.expect("set", "tp")
	want := slices.DeleteFunc(slices.Clone(v1Tools), func(n string) bool { return n == "env" })
	if !slices.Equal(e.tools, want) {
		t.Fatalf("published tools %v, want every one but env: %v", e.tools, want)
	}
	for _, d := range e.p.Tools() {
		if d.Name == "pid" && description(t, d.JSON) != "rewritten by scan" {
			t.Errorf("pid is served as %s, want the hook's rewrite", d.JSON)
		}
	}
	const reason = `refused by hook "scan": hidden instructions in the description`
	wantWhy := "tool env of plugin tp is held back: " + reason + " (plughost plugins)"
	if got := e.p.(tool.Withholder).WithheldTool("env"); got != wantWhy {
		t.Errorf("WithheldTool(env) = %q, want %q", got, wantWhy)
	}
	held := h.status("tp").Held
	if len(held) != 1 || held[0].Name != "env" || held[0].State != DefFlagged || held[0].Reason != reason || held[0].Listed == nil {
		t.Errorf("held = %+v, want env flagged with the hook's reason", held)
	}
	ev := awaitDef(t, defs, "env")
	if ev.State != DefFlagged || !ev.Held || ev.Reason != reason {
		t.Errorf("definition event %+v", ev)
	}
	if n, want := hooks.askedOf("tp"), len(v1Tools)+3; n != want { // and a prompt, a resource, a template
		t.Errorf("the hooks were asked %d questions about tp, want one per definition (%d)", n, want)
	}
	h.noEvent()
}

// TestHooksScreenAgainWhenTheirPluginIsReady: a plugin screened while
// its hook could not answer is held back by on_error; once the hook's
// plugin is ready it is asked again and served. The hook plugin's own
// definitions are asked with it as their provider (the chain skips its
// own hook for them). Hooks that do not say which plugins serve them
// (no HookServers) have every plugin that becomes ready count as theirs.
func TestHooksScreenAgainWhenTheirPluginIsReady(t *testing.T) {
	t.Parallel()
	t.Run("HookServers", func(t *testing.T) {
		t.Parallel()
		hooks := &fakeHooks{hookPlugin: "guard", hide: "env"}
		testScreenAgain(t, hooks, hooks)
	})
	t.Run("hooks alone", func(t *testing.T) {
		t.Parallel()
		hooks := &fakeHooks{hookPlugin: "guard", hide: "env"}
		testScreenAgain(t, hooks, struct{ tool.Hooks }{hooks})
	})
}

func testScreenAgain(t *testing.T, hooks *fakeHooks, opt tool.Hooks) {
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	defs := make(chan DefinitionEvent, 256)
	h := start(t, dir, Options{Hooks: opt, OnDefinition: func(e DefinitionEvent) { defs <- e }})
	h.ready()
	e := h.expect("set", "tp")
	if len(e.tools) != 0 {
		t.Fatalf("published %v while the hook could not answer, want nothing", e.tools)
	}
	if st := h.status("tp"); len(st.Held) != len(v1Tools)+3 || !strings.Contains(st.Held[0].Reason, "not ready") {
		t.Fatalf("held = %+v, want every definition, held by the failed hook", st.Held)
	}

	hooks.ready.Store(true)
	copyFile(t, pluginV1, filepath.Join(dir, "guard"), 0o755)
	// guard is published, then tp again, screened by the ready hook.
	seen := map[string][]string{}
	for seen["tp"] == nil || seen["guard"] == nil {
		e := h.next()
		if e.op == "set" {
			seen[e.name] = e.tools
		}
	}
	want := slices.DeleteFunc(slices.Clone(v1Tools), func(n string) bool { return n == "env" })
	if !slices.Equal(seen["tp"], want) {
		t.Fatalf("tp published %v once the hook was ready, want %v", seen["tp"], want)
	}
	if !slices.Equal(seen["guard"], v1Tools) {
		t.Fatalf("guard published %v, want all its tools: its own hook does not judge them", seen["guard"])
	}
	if ev := awaitDef(t, defs, "pid"); ev.Plugin != "tp" || ev.State != DefFlagged {
		t.Fatalf("first event of pid: %+v, want its hold by the failed hook", ev)
	}
	ev := awaitDef(t, defs, "pid")
	if ev.State != DefCleared || ev.Held {
		t.Fatalf("event of pid once the hook was ready: %+v", ev)
	}
	if hooks.askedOf("guard") != 0 {
		t.Error("the hook was asked about its own plugin's definitions")
	}
	if st := h.status("tp"); len(st.Held) != 1 || st.Held[0].Name != "env" {
		t.Fatalf("held = %+v, want env only", st.Held)
	}
}

// TestHooksScreenTheCachedListing: a plugin published from its catalog
// cache entry is screened before it is published: no client sees a
// hidden definition in the meantime.
func TestHooksScreenTheCachedListing(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{CacheDir: cacheDir})
	h.ready()
	h.expect("set", "tp")
	h.stop()

	hooks := &fakeHooks{hookPlugin: "guard", hide: "env"}
	hooks.ready.Store(true)
	h = start(t, dir, Options{CacheDir: cacheDir, Start: StartLazy, Hooks: hooks})
	h.ready()
	e := h.expect("set", "tp")
	if slices.Contains(e.tools, "env") || len(e.tools) != len(v1Tools)-1 {
		t.Fatalf("published from the cache: %v, want every tool but env", e.tools)
	}
	if st := h.status("tp"); st.State != StateIdle {
		t.Fatalf("status %+v, want idle: published from its cache entry", st)
	}
	// A call of the held tool is refused with the hook's reason, and does
	// not start the plugin.
	_, err := call(t, e.p, "env", "")
	if !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), "hidden instructions") {
		t.Fatalf("call of env: %v, want the hook's refusal", err)
	}
}

var _ HookServers = (*fakeHooks)(nil)

// A rewrite that renames the definition, or is over the size of a
// definition, is not served: the definition is held back.
func TestScreenOneRefusesABadRewrite(t *testing.T) {
	s := &supervisor{name: "tp", m: &Manager{opts: Options{Limits: pluginclient.Limits{MaxDefinitionSize: 100}}}}
	d := trust.Definition{Kind: trust.KindTool, Name: "a", JSON: json.RawMessage(`{"name":"a","inputSchema":{"type":"object"}}`)}
	for rewrite, want := range map[string]string{
		`{"name":"b","inputSchema":{"type":"object"}}`:                  "rewrote it into something else than a tool of that name",
		`{"name":"a","description":"` + strings.Repeat("x", 100) + `"}`: "a hook rewrote it into 129 bytes, over the limit of a definition (100 bytes",
		`"a"`: "rewrote it into something else",
	} {
		got := s.screenOne(context.Background(), rewriter(rewrite), d, d.JSON)
		if got.served != nil || !strings.Contains(got.reason, want) {
			t.Errorf("rewritten as %.40s: screened %+v, want held: %q", rewrite, got, want)
		}
	}
}

// rewriter rewrites every definition into itself.
type rewriter string

func (rewriter) Has(tool.HookPoint) bool { return true }
func (r rewriter) Apply(context.Context, *tool.HookCall) (json.RawMessage, error) {
	return json.RawMessage(r), nil
}
