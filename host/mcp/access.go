package mcp

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/plughost/plughost/host/tool"
)

// Per-caller access (Options.Access): each session holds the guard of its
// caller, set with its Peer. Its lists are the catalog's as the guard
// sees them, its calls, reads and prompt gets carry the guard for the
// catalog to decide, and its list_changed tells only of a change the
// caller can see: a tool that only others see comes and goes unnoticed.

// A guardedCatalog lists what one caller sees (host/catalog does).
type guardedCatalog interface {
	ListToolsFor(g tool.Guard, cursor string) ([]json.RawMessage, string, error)
	ListResourcesFor(g tool.Guard, cursor string) ([]json.RawMessage, string, error)
	ListResourceTemplatesFor(g tool.Guard, cursor string) ([]json.RawMessage, string, error)
	ListPromptsFor(g tool.Guard, cursor string) ([]json.RawMessage, string, error)
	// ViewSums hashes what g sees of each list; a change shows as a
	// different hash.
	ViewSums(g tool.Guard) (tools, resources, templates, prompts uint64)
	// MayRead reports whether g may read uri (subscriptions ask it).
	MayRead(g tool.Guard, uri string) bool
	// Sees reports whether g sees the tool exposed as name (a task's
	// requests ask it).
	Sees(g tool.Guard, name string) bool
	// CompleteFor is Catalog.Complete for the caller of g.
	CompleteFor(ctx context.Context, g tool.Guard, params json.RawMessage) (json.RawMessage, error)
}

// hidden reports whether the session's caller may not read uri: a
// subscription to it is answered as to an unknown resource.
func (v *view) hidden(srv *Server, uri string) bool {
	g := v.guard()
	return g != nil && !srv.guarded.MayRead(g, uri)
}

// view is a session's guard (nil: the caller sees everything; never nil
// without Options.Access, which makes Server.guarded the catalog) and what
// its client was last shown.
type view struct {
	g    atomic.Pointer[guardRef]
	sums viewSums
	// setMu orders set's calls: a Retune's must not store the guard of a
	// caller that SetPeer has just replaced.
	setMu  sync.Mutex
	caller *Caller // a copy of the session's, for Server.Retune's new rules; under setMu
}

type guardRef struct{ g tool.Guard }

// set makes the guard of caller the session's (none without
// Options.Access); a nil caller is the one set last (Server.Retune).
func (v *view) set(srv *Server, caller *Caller) {
	v.setMu.Lock()
	defer v.setMu.Unlock()
	if caller != nil {
		c := *caller // the session's may be rewritten (SetPeer) while Retune reads this
		v.caller = &c
	} else if caller = v.caller; caller == nil {
		return
	}
	access := srv.tuned().access
	if access == nil {
		v.g.Store(nil)
		return
	}
	if g := access(caller); g != nil {
		v.g.Store(&guardRef{g})
	} else {
		v.g.Store(nil)
	}
}

// track takes the sums of what the session's caller sees now, for its
// list_changed (a session that has notifications: not a stateless one).
func (v *view) track(srv *Server) { v.sums.reset(srv, v.guard()) }

// guard returns the session's guard; nil when it sees everything.
func (v *view) guard() tool.Guard {
	if r := v.g.Load(); r != nil {
		return r.g
	}
	return nil
}

// page returns the list function of a list kind as the session's caller
// sees it: all without a guard.
func (v *view) page(srv *Server, all func(string) ([]json.RawMessage, string, error), filtered func(guardedCatalog, tool.Guard, string) ([]json.RawMessage, string, error)) func(string) ([]json.RawMessage, string, error) {
	g := v.guard()
	if g == nil {
		return all
	}
	return func(cursor string) ([]json.RawMessage, string, error) { return filtered(srv.guarded, g, cursor) }
}

// viewSums are the hashes of what a client was last shown of each list
// kind (tools, resources with templates, prompts).
type viewSums struct {
	mu   sync.Mutex
	sums [3]uint64
}

func sumsOf(srv *Server, g tool.Guard) [3]uint64 {
	t, r, tm, p := srv.guarded.ViewSums(g)
	return [3]uint64{t, r*0x9e3779b97f4a7c15 ^ tm, p}
}

// reset takes the sums of what g sees now (nothing without a guard).
func (vs *viewSums) reset(srv *Server, g tool.Guard) {
	if g != nil {
		sums := sumsOf(srv, g)
		vs.mu.Lock()
		vs.sums = sums
		vs.mu.Unlock()
	}
}

// changed returns the list kinds among bits (the catalog's changes) whose
// view by g changed since the last call, and remembers the new sums.
// Without a guard, bits are returned as they are.
func (vs *viewSums) changed(srv *Server, g tool.Guard, bits uint32) uint32 {
	if g == nil || bits == 0 {
		return bits
	}
	now := sumsOf(srv, g)
	vs.mu.Lock()
	defer vs.mu.Unlock()
	for i, bit := range [...]uint32{listTools, listResources, listPrompts} {
		if now[i] == vs.sums[i] {
			bits &^= bit
		}
	}
	vs.sums = now
	return bits
}
