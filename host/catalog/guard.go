package catalog

import (
	"encoding/json"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/plughost/plughost/host/tool"
)

// Per-caller views (tool.Guard, built by package access from the
// configuration's rules). A guard decides, for one caller, which items it
// may see; the lists it gets are the catalog's with the others left out,
// and a call, read or prompt get of an item it cannot see is answered as
// if the item did not exist. What a guard decided is kept with the
// snapshot, by the guard's Key, so that a caller's lists cost one lookup
// after the first, and callers with the same key (the sessions of one
// user) share it. A new snapshot starts with none.

// maxViews bounds the views a snapshot keeps (each holds its lists' slices:
// with 1000 tools, about 50 KB); a caller beyond them is decided afresh at
// each request (correct, slower).
const maxViews = 256

// views are the views of one snapshot, by guard key.
type views struct {
	mu sync.Mutex
	m  map[string]*view
}

// view is what one guard decided of one snapshot: each list as it sees
// it, built at the first need, and paged as the catalog's own are.
type view struct {
	once  [numLists]sync.Once
	lists [numLists]list
	sum   [numLists]uint64
}

// The lists, as indexes of view's arrays.
const (
	toolsIdx = iota
	resourcesIdx
	templatesIdx
	promptsIdx
	numLists
)

var viewSeed = maphash.MakeSeed()

// view returns g's view of s.
func (s *snapshot) view(g tool.Guard) *view {
	key := g.Key()
	s.views.mu.Lock()
	defer s.views.mu.Unlock()
	if v := s.views.m[key]; v != nil {
		return v
	}
	v := &view{}
	if s.views.m == nil {
		s.views.m = map[string]*view{}
	}
	if len(s.views.m) < maxViews {
		s.views.m[key] = v
	}
	return v
}

func (s *snapshot) listAt(i int) *list {
	switch i {
	case toolsIdx:
		return &s.tools.list
	case resourcesIdx:
		return &s.resources.list
	case templatesIdx:
		return &s.templates.list
	}
	return &s.prompts.list
}

// visible returns list i as g sees it, and a hash of its items' JSON: when
// it changes, so did the caller's list.
func (s *snapshot) visible(g tool.Guard, i int) (*list, uint64) {
	v := s.view(g)
	v.once[i].Do(func() {
		l := s.listAt(i)
		seen := newList(0)
		var h maphash.Hash
		h.SetSeed(viewSeed)
		for j, it := range l.about {
			if g.Visible(it) {
				seen.add(l.keys[j], l.items[j], it)
				h.Write(l.items[j])
				h.WriteByte(0)
			}
		}
		v.lists[i], v.sum[i] = seen, h.Sum64()
	})
	return &v.lists[i], v.sum[i]
}

// sees reports whether g sees the item of list i at key.
func (s *snapshot) sees(g tool.Guard, i int, key string) bool {
	l, _ := s.visible(g, i)
	_, found := slices.BinarySearch(l.keys, key)
	return found
}

// ListToolsFor is ListTools as the caller of g sees it (nil g: all).
func (c *Catalog) ListToolsFor(g tool.Guard, cursor string) ([]json.RawMessage, string, error) {
	return c.listFor(g, toolsIdx, toolsList, cursor)
}

// ListResourcesFor is ListResources as the caller of g sees it.
func (c *Catalog) ListResourcesFor(g tool.Guard, cursor string) ([]json.RawMessage, string, error) {
	return c.listFor(g, resourcesIdx, resourcesList, cursor)
}

// ListResourceTemplatesFor is ListResourceTemplates as the caller of g
// sees it.
func (c *Catalog) ListResourceTemplatesFor(g tool.Guard, cursor string) ([]json.RawMessage, string, error) {
	return c.listFor(g, templatesIdx, templatesList, cursor)
}

// ListPromptsFor is ListPrompts as the caller of g sees it.
func (c *Catalog) ListPromptsFor(g tool.Guard, cursor string) ([]json.RawMessage, string, error) {
	return c.listFor(g, promptsIdx, promptsList, cursor)
}

func (c *Catalog) listFor(g tool.Guard, i int, k listKind, cursor string) ([]json.RawMessage, string, error) {
	s := c.snap.Load()
	if g == nil {
		return s.listAt(i).page(k, cursor, c.pageSize)
	}
	l, _ := s.visible(g, i)
	return l.page(k, cursor, c.pageSize)
}

// ViewSums returns, per list (tools, resources, templates, prompts), a
// hash of what the caller of g sees of it: a session compares them before
// and after a change, and tells its client of the lists whose hash
// changed only.
func (c *Catalog) ViewSums(g tool.Guard) (tools, resources, templates, prompts uint64) {
	s := c.snap.Load()
	var sums [numLists]uint64
	for i := range sums {
		_, sums[i] = s.visible(g, i)
	}
	return sums[0], sums[1], sums[2], sums[3]
}

// mayRead reports whether the caller of g may read uri: a listed resource
// it sees, or a URI of a template it sees (the first that matches, as
// routing goes) that it may read (the rules see the read as a resource of
// that URI, without a name; a read has no arguments, so a rule on them
// does not refuse it). False when nothing serves uri.
func (s *snapshot) mayRead(g tool.Guard, uri string) bool {
	if s.resources.routes[uri] != nil {
		return s.sees(g, resourcesIdx, uri)
	}
	for _, t := range s.templates.order {
		if t.t.re.MatchString(uri) {
			return s.sees(g, templatesIdx, templateKey(t.t.uriTemplate, t.p.name)) &&
				g.Visible(&tool.Item{Kind: tool.ItemResource, URI: uri, Provider: t.p.name})
		}
	}
	return false
}

// MayRead reports whether the caller of g may read uri (nil g: whether
// any provider serves it): whether a read would reach a provider.
func (c *Catalog) MayRead(g tool.Guard, uri string) bool {
	s := c.snap.Load()
	if g == nil {
		return s.serving(uri, nil) != nil
	}
	return s.mayRead(g, uri)
}

// Sees reports whether the caller of g sees the tool exposed as name (nil
// g: whether it is exposed).
func (c *Catalog) Sees(g tool.Guard, name string) bool {
	s := c.snap.Load()
	if g == nil {
		return s.tools.routes[name] != nil
	}
	return s.sees(g, toolsIdx, name)
}
