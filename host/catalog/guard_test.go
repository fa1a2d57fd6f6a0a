package catalog

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/tool"
)

// hider is a tool.Guard that hides the items whose name, URI or provider
// it names, and refuses arguments that contain "forbidden".
type hider struct {
	key    string
	hidden []string
	asked  *int // counts Visible
}

func (h hider) Key() string { return h.key }
func (h hider) Visible(it *tool.Item) bool {
	if h.asked != nil {
		*h.asked++
	}
	return !slices.Contains(h.hidden, it.Name) && !slices.Contains(h.hidden, it.URI) && !slices.Contains(h.hidden, it.Provider)
}
func (h hider) Allow(it *tool.Item, args json.RawMessage) error {
	if strings.Contains(string(args), "forbidden") {
		return tool.Errorf(tool.ErrRefused, "%s %s is not allowed for %s: rule %q denies it", it.Kind, it.Name, h.key, "no forbidden")
	}
	return nil
}

func pageNames(t *testing.T, list func(string) ([]json.RawMessage, string, error)) ([]string, int) {
	t.Helper()
	var names []string
	pages, cursor := 0, ""
	for {
		items, next, err := list(cursor)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, it := range items {
			names = append(names, nameOf(t, it))
		}
		if next == "" {
			return names, pages
		}
		cursor = next
	}
}

// A guard's lists leave out what it hides, page by page (a page is full
// of visible items, and the last page has no next cursor), and what it
// decided is asked once per snapshot.
func TestListsForAGuard(t *testing.T) {
	c := New(&Options{PageSize: 2})
	defer c.Close()
	c.Set(newProvider("files", "read", "write", "list", "stat", "delete"))
	asked := 0
	g := hider{key: "bob", hidden: []string{"write", "delete"}, asked: &asked}
	names, pages := pageNames(t, func(cur string) ([]json.RawMessage, string, error) { return c.ListToolsFor(g, cur) })
	want := []string{"list", "read", "stat"}
	if !slices.Equal(names, want) || pages != 2 {
		t.Errorf("bob's tools: %v in %d pages, want %v in 2", names, pages, want)
	}
	all, _ := pageNames(t, func(cur string) ([]json.RawMessage, string, error) { return c.ListToolsFor(nil, cur) })
	if len(all) != 5 {
		t.Errorf("no guard: %v, want all five", all)
	}
	if asked != 5 {
		t.Errorf("the guard was asked %d times over two pages, want 5 (once per tool per snapshot)", asked)
	}
	if !c.Sees(g, "read") || c.Sees(g, "write") || c.Sees(g, "nothing") || !c.Sees(nil, "write") {
		t.Error("Sees disagrees with the list")
	}
}

// A hidden tool is called as an unknown one (the caller cannot tell it
// from none), and a refusal of the arguments names the rule.
func TestCallsForAGuard(t *testing.T) {
	c := New(nil)
	defer c.Close()
	p := newProvider("files", "read", "write")
	c.Set(p)
	g := hider{key: "bob", hidden: []string{"write"}}
	if _, err := c.CallTool(t.Context(), &tool.Call{Name: "write", Guard: g}); !errors.Is(err, tool.ErrUnknownTool) {
		t.Errorf("hidden tool: %v, want unknown", err)
	}
	_, err := c.CallTool(t.Context(), &tool.Call{Name: "read", Arguments: json.RawMessage(`{"path":"forbidden"}`), Guard: g})
	if !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), `rule "no forbidden"`) {
		t.Errorf("refused arguments: %v", err)
	}
	caller := &tool.Caller{Subject: "bob"}
	if _, err := c.CallTool(t.Context(), &tool.Call{Name: "read", Arguments: json.RawMessage(`{}`), Guard: g, Caller: caller}); err != nil {
		t.Errorf("allowed call: %v", err)
	}
	got := p.received()
	if len(got) != 1 || got[0].Name != "read" || got[0].Caller != caller {
		t.Errorf("the provider got %+v, want one call of read with the caller", got)
	}
}

// Prompts, resources and templates: hidden ones are not listed, and a get
// or read of one is answered as of an unknown one; a read through a
// hidden template too.
func TestSurfaceForAGuard(t *testing.T) {
	c := New(nil)
	defer c.Close()
	c.Set(newServer("notes").with("notes://a", "notes://b", "notes://{id}", "greet", "secret"))
	c.Set(newServer("vault").with("vault://{key}"))
	g := hider{key: "bob", hidden: []string{"notes://b", "secret", "vault://{key}"}}
	if n, _ := pageNames(t, func(cur string) ([]json.RawMessage, string, error) { return c.ListPromptsFor(g, cur) }); !slices.Equal(n, []string{"greet"}) {
		t.Errorf("prompts: %v", n)
	}
	if items, _, _ := c.ListResourcesFor(g, ""); len(items) != 1 || !strings.Contains(string(items[0]), "notes://a") {
		t.Errorf("resources: %s", items)
	}
	if items, _, _ := c.ListResourceTemplatesFor(g, ""); len(items) != 1 || !strings.Contains(string(items[0]), "notes://{id}") {
		t.Errorf("templates: %s", items)
	}
	if _, err := c.GetPrompt(t.Context(), &tool.PromptGet{Name: "secret", Guard: g}); !errors.Is(err, tool.ErrUnknownPrompt) {
		t.Errorf("hidden prompt: %v", err)
	}
	if _, err := c.GetPrompt(t.Context(), &tool.PromptGet{Name: "greet", Guard: g}); err != nil {
		t.Errorf("prompt: %v", err)
	}
	for uri, visible := range map[string]bool{"notes://a": true, "notes://b": false, "notes://c": true, "vault://k": false} {
		_, err := c.ReadResource(t.Context(), &tool.Read{URI: uri, Guard: g})
		if visible != (err == nil) || (!visible && !errors.Is(err, tool.ErrUnknownResource)) {
			t.Errorf("read %s: %v, want visible=%v", uri, err, visible)
		}
		if c.MayRead(g, uri) != visible || !c.MayRead(nil, uri) {
			t.Errorf("MayRead %s disagrees with the read", uri)
		}
	}
	complete := func(ref string) error {
		_, err := c.CompleteFor(t.Context(), g, json.RawMessage(`{"ref":`+ref+`,"argument":{"name":"key","value":""}}`))
		return err
	}
	if err := complete(`{"type":"ref/prompt","name":"secret"}`); !errors.Is(err, tool.ErrUnknownPrompt) {
		t.Errorf("completing a hidden prompt: %v", err)
	}
	if err := complete(`{"type":"ref/resource","uri":"vault://{key}"}`); !errors.Is(err, tool.ErrUnknownResource) {
		t.Errorf("completing a hidden template: %v", err)
	}
	if _, err := c.CompleteFor(t.Context(), nil, json.RawMessage(`{"ref":{"type":"ref/resource","uri":"vault://{key}"},"argument":{"name":"key","value":""}}`)); err != nil {
		t.Errorf("completing without a guard: %v", err)
	}
}

// ViewSums change when what the guard sees changes, and only then.
func TestViewSums(t *testing.T) {
	c := New(nil)
	defer c.Close()
	c.Set(newProvider("files", "read"))
	g := hider{key: "bob", hidden: []string{"admin"}}
	t0, _, _, _ := c.ViewSums(g)
	c.Set(newProvider("admin", "reset")) // hidden from bob: his view is the same
	if t1, _, _, _ := c.ViewSums(g); t1 != t0 {
		t.Error("a tool bob cannot see changed his view")
	}
	if t1, _, _, _ := c.ViewSums(hider{key: "root"}); t1 == t0 {
		t.Error("root's view should differ")
	}
	c.Set(newProvider("files", "read", "write"))
	if t2, _, _, _ := c.ViewSums(g); t2 == t0 {
		t.Error("a tool bob sees came and his view did not change")
	}
}
