package catalog

import (
	"sort"

	"github.com/plughost/plughost/host/naming"
)

// How tools and prompts get their exposed names, and how renames are
// logged. Names are sticky: a (provider, own name) pair keeps the exposed
// name the previous snapshot gave it for as long as its provider offers
// it, so clash resolution never moves a name a client called to another
// provider; a newcomer whose name clashes gets its provider's prefix
// (package naming, Assign). The providers published while the catalog is
// held (the plugin manager holds it while one burst of plugins loads) are
// named together, as if published in one SetAll, whatever the order they
// came in: their names are kept once the hold ends.

// named is one tool or prompt of a provider and the name it is exposed by.
type named[T any] struct {
	n *naming.Name
	v T
	p *provider
}

// nameAll names what every provider offers of one kind (of returns a
// provider's, own an item's own name) by package naming's rules, keeping
// the names prev assigned, and returns the items sorted by exposed name,
// and how they were named.
func nameAll[T any](providers map[string]*provider, prev []*naming.Name, of func(*provider) []T, own func(T) string) ([]named[T], names) {
	var items []named[T]
	for _, st := range providers {
		for _, v := range of(st) {
			items = append(items, named[T]{&naming.Name{Provider: st.name, Own: own(v)}, v, st})
		}
	}
	ns := make([]*naming.Name, len(items))
	for i, it := range items {
		ns[i] = it.n
	}
	naming.Assign(ns, prev)
	sort.Slice(items, func(i, j int) bool { return items[i].n.Exposed < items[j].n.Exposed })
	return items, names{assigned: ns}
}

// names is how one kind's names (tools', prompts') were assigned: the next
// snapshot keeps them, and logs what changed.
type names struct {
	assigned []*naming.Name // sorted by provider, then own name
}

// kept returns the names the next snapshot keeps: all but those of the
// provisional providers.
func (ns *names) kept(provisional map[string]uint64) []*naming.Name {
	if len(provisional) == 0 {
		return ns.assigned
	}
	out := make([]*naming.Name, 0, len(ns.assigned))
	for _, n := range ns.assigned {
		if _, ok := provisional[n.Provider]; !ok {
			out = append(out, n)
		}
	}
	return out
}

// maxRenameExamples bounds the renames one log line names: a provider
// with many renamed names gets one line with a count and the first few.
const maxRenameExamples = 5

// logNames warns once per provider about its names of kind that are
// newly exposed under another name (a clash, a reserved prefix, a
// sanitised, shortened or disambiguated name): one line per provider per
// rebuild, whatever the number of names, so that a burst of clashing
// devices logs as many lines as devices, each of bounded length. A name
// already exposed so in old was logged when it happened.
func (c *Catalog) logNames(kind Kind, old, s *names) {
	k := string(kind)
	before := make(map[[2]string]string, len(old.assigned))
	for _, n := range old.assigned {
		before[[2]string{n.Provider, n.Own}] = n.Exposed
	}
	var renamed []*naming.Name // of one provider, s.assigned being sorted by provider
	flush := func() {
		if len(renamed) == 0 {
			return
		}
		n := renamed[0]
		if len(renamed) == 1 {
			c.log.Warn(k+" exposed under another name", "provider", n.Provider, k, n.Own, "exposed", n.Exposed, "reason", n.Reason)
		} else {
			examples := make([]string, 0, maxRenameExamples)
			for _, r := range renamed[:min(len(renamed), maxRenameExamples)] {
				examples = append(examples, r.Own+" as "+r.Exposed+" ("+r.Reason+")")
			}
			c.log.Warn(k+"s exposed under other names", "provider", n.Provider, "count", len(renamed), "first", examples)
		}
		renamed = renamed[:0]
	}
	for _, n := range s.assigned {
		if len(renamed) > 0 && renamed[0].Provider != n.Provider {
			flush()
		}
		if n.Exposed == n.Own || before[[2]string{n.Provider, n.Own}] == n.Exposed {
			continue
		}
		renamed = append(renamed, n)
	}
	flush()
}
