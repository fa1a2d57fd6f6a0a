package toolsearch

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
)

// ranking is how the index scores; defaultRanking is the product's, the
// others exist for the ablation in eval_test.go.
type ranking struct {
	analyzer analyzer
	// weights of a term found in each field of a document (BM25F): an
	// occurrence in a field of weight 3 counts as three in one of weight
	// 1, before saturation. A provider's document uses the weights of
	// fName, fTitle and fDesc.
	weights [nFields]float64
	k1, b   float64
	// provider is the share of a query's match with a tool's provider
	// (its name, title and description, scored by BM25F among the
	// providers) added to the tool's own score.
	provider float64
}

// defaultRanking: a name and a title say what a tool is, so they weigh
// most; the description explains it; parameter texts mostly describe
// inputs ("path", "query") shared by tools of every kind, so they weigh
// least. k1 and b are BM25's usual values.
//
// The provider's match is added whole (share 1): it and the tool's own
// match are two independent estimates of relevance on the same scale
// (BM25 sums of IDF-weighted, saturated frequencies), and independent
// evidence adds. Scoring the provider among providers, rather than
// copying its text into each tool, keeps a provider's words as rare as
// they are among providers: copied into its 35 tools, "presentation"
// would look common and weigh little.
var defaultRanking = ranking{
	analyzer: defaultAnalyzer,
	weights:  [nFields]float64{fName: 3, fTitle: 3, fDesc: 1, fParams: 0.5},
	k1:       1.2,
	b:        0.75,
	provider: 1,
}

// Search returns at most limit tools that best match query, best first.
// A query is natural language or keywords ("convert a word document to
// pdf", "stock price"): a tool matches by the words it shares with it
// (see the package doc). Tools that share no word with the query, and
// whose provider shares none either, are never returned; equal scores are
// ordered by provider, then name. limit ≤ 0 returns nothing.
func (x *Index) Search(query string, limit int) []Hit {
	return x.SearchVisible(query, limit, nil)
}

// SearchVisible is Search over the tools for which visible(provider,
// name) is true (nil: all of them), so a caller who may see only some
// tools is never shown the others, and still gets limit hits when there
// are enough visible ones. visible is called with the index's read lock
// held: it must not update the index.
func (x *Index) SearchVisible(query string, limit int, visible func(provider, name string) bool) []Hit {
	if limit <= 0 {
		return nil
	}
	terms := queryTerms(x.rank.analyzer, query)
	if len(terms) == 0 {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := x.getScratch()
	defer x.putScratch(s)
	return x.hits(x.lexical(s, terms, limit, visible))
}

// lexical returns the limit visible tools that best match terms, best
// first; x.mu is held.
func (x *Index) lexical(s *scratch, terms []string, limit int, visible func(provider, name string) bool) []candidate {
	s.toolHit = x.tools.score(terms, x.rank.k1, s.tool, s.toolHit[:0])
	s.provHit = x.provs.score(terms, x.rank.k1, s.prov, s.provHit[:0])
	alpha := x.rank.provider

	top := &s.top
	*top = (*top)[:0]
	offer := func(slot int32, score float64) {
		d := &x.tools.docs[slot]
		if visible != nil && !visible(d.provider, d.name) {
			return
		}
		top.offer(candidate{slot: slot, score: score, provider: d.provider, name: d.name}, limit)
	}
	for _, slot := range s.toolHit {
		offer(slot, s.tool[slot]+alpha*s.prov[x.tools.docs[slot].provSlot])
	}
	if alpha > 0 {
		// The tools of a matching provider that match nothing themselves.
		for _, ps := range s.provHit {
			lift := alpha * s.prov[ps]
			for _, slot := range x.providers[x.provs.docs[ps].name].tools {
				if s.tool[slot] == 0 {
					offer(slot, lift)
				}
			}
		}
	}
	return top.sorted()
}

// hits turns candidates into Hits; x.mu is held.
func (x *Index) hits(cs []candidate) []Hit {
	hits := make([]Hit, len(cs))
	for i, c := range cs {
		d := &x.tools.docs[c.slot]
		hits[i] = Hit{Name: d.name, Provider: d.provider, Score: c.score, Def: d.def}
	}
	return hits
}

// queryTerms returns the distinct terms of a query: a word said twice is
// not twice the evidence.
func queryTerms(a analyzer, query string) []string {
	terms := a.terms(nil, query)
	slices.Sort(terms)
	return slices.Compact(terms)
}

// score adds the BM25F score of each document holding one of terms to
// acc (by slot) and appends the slots it scored first to hit.
//
// A term's frequency is summed over the fields, each occurrence counted
// by the field's norm (its weight over its length normalization), then
// saturated once: tf / (k1 + tf), times the term's IDF (Lucene's form,
// ln(1 + (N - df + 0.5) / (df + 0.5)), never negative).
func (c *corpus) score(terms []string, k1 float64, acc []float64, hit []int32) []int32 {
	n := float64(c.live)
	for _, t := range terms {
		ps := c.post[t]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			norm := &c.norm[p.doc]
			tf := 0.0
			for f := range nFields {
				tf += float64(p.tf[f]) * norm[f]
			}
			if tf == 0 {
				continue // only in fields of weight 0
			}
			if acc[p.doc] == 0 {
				hit = append(hit, p.doc)
			}
			acc[p.doc] += idf * tf / (k1 + tf)
		}
	}
	return hit
}

// candidate is a tool on its way to the top limit.
type candidate struct {
	slot           int32
	score          float64
	provider, name string
}

// better orders candidates: higher score, then provider and name.
func (c candidate) better(o candidate) bool {
	if c.score != o.score {
		return c.score > o.score
	}
	if r := cmp.Compare(c.provider, o.provider); r != 0 {
		return r < 0
	}
	return c.name < o.name
}

// topK is a heap whose root is the worst of the best candidates so far.
type topK []candidate

func (h topK) Len() int           { return len(h) }
func (h topK) Less(i, j int) bool { return h[j].better(h[i]) }
func (h topK) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *topK) Push(x any)        { *h = append(*h, x.(candidate)) }
func (h *topK) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// offer keeps c if it is among the limit best so far.
func (h *topK) offer(c candidate, limit int) {
	if len(*h) < limit {
		heap.Push(h, c)
	} else if c.better((*h)[0]) {
		(*h)[0] = c
		heap.Fix(h, 0)
	}
}

// sorted sorts the kept candidates best first and returns them.
func (h *topK) sorted() []candidate {
	slices.SortFunc(*h, func(a, b candidate) int {
		if a.better(b) {
			return -1
		}
		return 1
	})
	return *h
}

// scratch is one search's working memory, reused through Index.scratch.
type scratch struct {
	tool, prov       []float64 // scores by slot; zero outside the hits
	toolHit, provHit []int32   // slots with a score
	top              topK
}

// getScratch returns zeroed scores for the current corpora; x.mu is held.
func (x *Index) getScratch() *scratch {
	s, _ := x.scratch.Get().(*scratch)
	if s == nil {
		s = new(scratch)
	}
	if len(s.tool) < len(x.tools.docs) {
		s.tool = make([]float64, len(x.tools.docs))
	}
	if len(s.prov) < len(x.provs.docs) {
		s.prov = make([]float64, len(x.provs.docs))
	}
	return s
}

// putScratch zeroes the scores a search set and returns s to the pool.
func (x *Index) putScratch(s *scratch) {
	for _, slot := range s.toolHit {
		s.tool[slot] = 0
	}
	for _, slot := range s.provHit {
		s.prov[slot] = 0
	}
	x.scratch.Put(s)
}
