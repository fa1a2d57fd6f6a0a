package mcp

import (
	"context"
	"slices"
	"sync"
)

// Found tools (ToolSearch.AddFound): a client that handles list_changed
// can have the tools search_tools finds join its session's own tools/list,
// so that the model sees them as tools and calls them by name without
// call_tool. Each session keeps the exposed names it found, at most
// AddFound of them; its tools/list is the host's two tools, the pins,
// then the found tools the catalog exposes at that moment, least recently
// found first. A tool whose plugin is gone is therefore no longer listed
// (and listed again if it comes back) without the session doing anything:
// the catalog's own list_changed tells the client.
//
// At the bound the least recently found tool leaves the list: a model
// searches for what its task needs now, so the newest finds are the ones
// to list, and a tool that left can still be called by name or through
// call_tool, or found again (a tool found again becomes the most recent).
// Refusing new finds instead would freeze the list on the session's first
// searches.
//
// A search adds its hits worst first, so that the best ones are the most
// recent and the last to leave; hits the list holds anyway (the pins, and
// a plugin's search_tools or call_tool, shadowed by the host's) are not
// added. When the set of found names changed, the session sends
// notifications/tools/list_changed through its notifier, which coalesces
// it with the catalog's own (one per burst).
//
// Stateless requests (2026-07-28) have no session: a search there adds
// nothing, and the client calls what it found through call_tool or by
// name. So do the stateless requests a session's transport carries.

// MaxAddFound is the largest ToolSearch.AddFound: a session's list holds
// at most that many found tools (some 200 tokens of definition each).
const MaxAddFound = 64

// foundTools is the tools search_tools found in one session.
type foundTools struct {
	bound   int
	changed func() // the session's list changed: list_changed is due

	mu    sync.Mutex
	names []string // exposed names, least recently found first; at most bound
}

// foundKey is the context key of a search_tools call's foundTools: the
// session's, set by callsHandler.startCall for a call of the session
// (never a stateless request's), read by searchCatalog.search.
type foundKey struct{}

// withFound returns ctx carrying f.
func withFound(ctx context.Context, f *foundTools) context.Context {
	return context.WithValue(ctx, foundKey{}, f)
}

// foundIn returns the foundTools ctx carries, or nil.
func foundIn(ctx context.Context) *foundTools {
	f, _ := ctx.Value(foundKey{}).(*foundTools)
	return f
}

// newFoundTools returns the found tools of session s, at most bound.
func newFoundTools(s *Session, bound int) *foundTools {
	return &foundTools{bound: bound, changed: func() { s.notes.own.Or(listTools); s.wakeNotifier() }}
}

// add records names as found now, the first one the most recent, and
// evicts the least recently found beyond the bound. When the set of names
// changed it calls changed.
func (f *foundTools) add(names []string) {
	if len(names) == 0 {
		return
	}
	f.mu.Lock()
	before := slices.Clone(f.names)
	for _, name := range slices.Backward(names) {
		if i := slices.Index(f.names, name); i >= 0 {
			f.names = slices.Delete(f.names, i, i+1)
		}
		f.names = append(f.names, name)
		if len(f.names) > f.bound {
			f.names = slices.Delete(f.names, 0, 1)
		}
	}
	changed := !sameSet(before, f.names)
	f.mu.Unlock()
	if changed {
		f.changed()
	}
}

// list returns the names, least recently found first.
func (f *foundTools) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.names)
}

// sameSet reports whether a and b, each without duplicates, hold the same
// names.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, n := range a {
		if !slices.Contains(b, n) {
			return false
		}
	}
	return true
}
