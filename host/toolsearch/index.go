package toolsearch

import (
	"encoding/json"
	"fmt"
	"sync"
)

// Provider is what the index reads of a tool's provider besides its name:
// for a plugin, the serverInfo it reports (or the operator's
// description of it); for a device, what it says of itself.
type Provider struct {
	// Title is the provider's human-readable name ("Yahoo Finance").
	Title string
	// Description says what the provider's tools are for as a whole.
	Description string
}

// Hit is one tool found by Search.
type Hit struct {
	// Name is the tool's name: the "name" of its definition, the name a
	// client calls it by.
	Name string
	// Provider is the name of the provider that offers it.
	Provider string
	// Score orders the hits: higher is better. It is comparable only
	// between hits of one search.
	Score float64
	// Def is the tool's definition, the bytes given to Set (shared: do
	// not modify them).
	Def json.RawMessage
}

// Index is an in-memory search index of tools, grouped by provider. It is
// safe for concurrent use: searches run in parallel with each other, and
// an update (Set, Remove) waits for the searches under way and holds new
// ones back only while it changes the postings, not while it reads the
// definitions. The zero Index is not usable: make one with New.
type Index struct {
	rank ranking

	mu        sync.RWMutex
	tools     corpus                   // one document per tool
	provs     corpus                   // one document per provider
	providers map[string]*providerDocs // by provider name
	sem       *semantic                // nil: lexical ranking only (New)

	scratch sync.Pool // *scratch, a search's working memory
}

// providerDocs are one provider's documents.
type providerDocs struct {
	slot  int32     // in Index.provs
	tools []int32   // in Index.tools
	keys  []textKey // the tools' embedded texts (semantic ranking only)
}

// New returns an empty index.
func New() *Index {
	return newIndex(defaultRanking)
}

func newIndex(r ranking) *Index {
	return &Index{
		rank:      r,
		tools:     newCorpus(r.weights, r.b),
		provs:     newCorpus(r.weights, r.b),
		providers: make(map[string]*providerDocs),
	}
}

// Set makes tools, the MCP Tool objects (as JSON) that provider offers,
// the index's tools of that provider, replacing any it had; info is what
// the index reads of the provider itself. An empty tools removes the
// provider, as Remove does. The definitions are kept (a Hit returns them)
// and must not be modified afterwards.
//
// A definition that is not a JSON object with a string "name" is an
// error wrapping ErrInvalidTool, and the index is left as it was. Two
// definitions with the same name are indexed as two tools: names are the
// caller's business (the catalog makes them unique).
func (x *Index) Set(provider string, info Provider, tools []json.RawMessage) error {
	if len(tools) == 0 {
		x.Remove(provider)
		return nil
	}
	// Read and analyze every definition before taking the lock: that is
	// most of an update's time, and searches go on meanwhile.
	a := x.rank.analyzer
	a.stems = make(map[string]string)
	docs := make([]analyzed, len(tools))
	var texts []string
	var keys []textKey
	if x.sem != nil {
		texts, keys = make([]string, len(tools)), make([]textKey, len(tools))
	}
	for i, def := range tools {
		tt, err := readTool(def)
		if err != nil {
			return fmt.Errorf("provider %q, tool %d: %w", provider, i, err)
		}
		docs[i] = analyze(a, tt.name, def, &tt.fields)
		if x.sem != nil {
			texts[i] = embedText(provider, info, &tt)
			keys[i] = keyOf(texts[i])
		}
	}
	var pf [nFields][]string
	pf[fName] = []string{provider}
	pf[fTitle] = []string{info.Title}
	pf[fDesc] = []string{info.Description}
	pdoc := analyze(a, provider, nil, &pf)

	x.mu.Lock()
	defer x.mu.Unlock()
	if x.sem != nil {
		// Before the old tools are released, so that a text they share
		// with the new ones keeps its vector.
		x.sem.retain(keys, texts)
	}
	x.remove(provider)
	pd := &providerDocs{slot: x.provs.add(pdoc, provider, -1)}
	pd.tools = make([]int32, len(docs))
	for i := range docs {
		pd.tools[i] = x.tools.add(docs[i], provider, pd.slot)
	}
	if x.sem != nil {
		pd.keys = keys
		for i, slot := range pd.tools {
			x.tools.docs[slot].key = keys[i]
		}
	}
	x.providers[provider] = pd
	x.tools.renorm()
	x.provs.renorm()
	return nil
}

// Remove removes provider and all its tools from the index. Removing a
// provider the index does not hold does nothing.
func (x *Index) Remove(provider string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.remove(provider) {
		x.tools.renorm()
		x.provs.renorm()
	}
}

// remove removes provider's documents; x.mu is held.
func (x *Index) remove(provider string) bool {
	pd, ok := x.providers[provider]
	if !ok {
		return false
	}
	x.tools.remove(pd.tools)
	x.provs.remove([]int32{pd.slot})
	if x.sem != nil {
		x.sem.release(pd.keys)
	}
	delete(x.providers, provider)
	return true
}
