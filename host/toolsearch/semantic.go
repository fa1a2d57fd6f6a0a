package toolsearch

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Embedder turns texts into vectors that lie close when the texts mean
// close things: a sentence-embedding model, such as one served by an
// OpenAI-compatible /v1/embeddings endpoint (package host/embeddings).
type Embedder interface {
	// Embed returns one vector per text, in order, all of one dimension.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Semantic configures an index's semantic ranking (NewSemantic).
type Semantic struct {
	// Embedder embeds the tools' texts and the queries. It must not be
	// nil.
	Embedder Embedder
	// OnError is told why a tool's or a query's embedding failed (nil:
	// not told). A failed query is ranked lexically; failed tools are
	// tried again later. It is called at most once a minute, with how
	// many failures it stands for.
	OnError func(err error, failures int)
	// OnEmbedded is told, when the background embedding has caught up
	// (every tool has its vector), how many distinct texts the index
	// holds vectors for (nil: not told).
	OnEmbedded func(texts int)
}

// Limits of the semantic ranking.
const (
	// embedBatch is how many tool texts go to the embedder at once.
	embedBatch = 64
	// embedTextBytes bounds a tool's embedded text: a model reads a few
	// hundred tokens at most, and the start says what the tool is.
	embedTextBytes = 1000
	// providerTextBytes bounds what of the provider's description opens
	// each of its tools' texts.
	providerTextBytes = 300
	// fusionDepth is how many hits of each ranking are fused.
	fusionDepth = 100
	// retryMin and retryMax bound the wait before the tools whose
	// embedding failed are tried again, doubling from one to the other.
	retryMin, retryMax = time.Second, time.Minute
)

// Reciprocal rank fusion of the lexical and the semantic rankings: a tool
// scores Σ w/(rrfK + rank) over the rankings it is in. Ranks, not scores,
// are fused: BM25's and cosine's scales have nothing in common. The
// lexical ranking weighs twice the semantic one: on ../shared/toolsearch
// with a small sentence model (Universal Sentence Encoder lite) the
// semantic ranking alone finds less (recall@5 0.30 against 0.39) but
// other tools, and fused at weights 1 and 0.5 the two find more than
// either (0.44); rrfK 10 keeps the top of each ranking ahead of the rest,
// where the usual 60 flattens a short list of tools (see doc.go).
const (
	rrfK           = 10
	semanticWeight = 0.5
)

// textKey names an embedded text: tools with the same text share one
// vector, and a reload that changes nothing embeds nothing.
type textKey uint64

func keyOf(text string) textKey {
	h := fnv.New64a()
	h.Write([]byte(text))
	return textKey(h.Sum64())
}

// semantic is the index's semantic part: the vectors of the live tools'
// texts and a worker that embeds new texts in the background, so that an
// update never waits for the embedder (a tool is found lexically at once,
// and semantically once its vector has arrived).
type semantic struct {
	Semantic

	// vectors and refs are guarded by the Index's mu: a search reads the
	// vectors while it holds the read lock.
	vectors map[textKey][]float32
	refs    map[textKey]int // live tools per text

	mu      sync.Mutex
	pending map[textKey]string // texts of live tools still to embed
	settled chan struct{}      // closed, and replaced, after each attempt
	errs    errorLog

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

// NewSemantic returns an empty index that ranks by meaning as well as by
// words: each tool's text (its provider, name and description) and each
// query are embedded by s.Embedder, and the tools nearest the query by
// cosine are fused with the lexical ranking (see SearchContext). Close
// it when done, to stop its background embedding.
func NewSemantic(s Semantic) *Index {
	x := newIndex(defaultRanking)
	x.sem = &semantic{
		Semantic: s,
		vectors:  make(map[textKey][]float32),
		refs:     make(map[textKey]int),
		pending:  make(map[textKey]string),
		settled:  make(chan struct{}),
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go x.sem.run(x)
	return x
}

// Close stops the index's background embedding and waits for it. An
// index without semantic ranking has nothing to stop. Searches still work
// after Close; tools set afterwards are found by their words only.
func (x *Index) Close() {
	if x.sem == nil {
		return
	}
	select {
	case <-x.sem.stop:
	default:
		close(x.sem.stop)
	}
	<-x.sem.done
}

// embedText is what is embedded of a tool: its provider, its name split
// into words, its title and its description, in at most embedTextBytes.
func embedText(provider string, info Provider, tt *toolText) string {
	var b strings.Builder
	b.WriteString(cmp.Or(info.Title, provider))
	if d := truncate(info.Description, providerTextBytes); d != "" {
		b.WriteString(" (" + d + ")")
	}
	b.WriteString(": ")
	b.WriteString(strings.Join(splitAnalyzer.terms(nil, tt.name), " "))
	for _, t := range tt.fields[fTitle] {
		if t != "" {
			b.WriteString(". " + t)
		}
	}
	for _, d := range tt.fields[fDesc] {
		if d != "" {
			b.WriteString(". " + d)
		}
	}
	return truncate(b.String(), embedTextBytes)
}

// splitAnalyzer splits a tool's name into the words a model reads.
var splitAnalyzer = analyzer{split: true}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// retain counts tools whose text is key, queueing the texts not embedded
// yet; x.mu is held.
func (s *semantic) retain(keys []textKey, texts []string) {
	var queued bool
	s.mu.Lock()
	for i, k := range keys {
		s.refs[k]++
		if _, ok := s.vectors[k]; !ok {
			s.pending[k] = texts[i]
			queued = true
		}
	}
	s.mu.Unlock()
	if queued {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// release uncounts tools whose text is key, dropping the vectors and
// pending texts no live tool has any more; x.mu is held.
func (s *semantic) release(keys []textKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if s.refs[k]--; s.refs[k] <= 0 {
			delete(s.refs, k)
			delete(s.vectors, k)
			delete(s.pending, k)
		}
	}
}

// run embeds pending texts in batches until stopped, waiting longer
// after each failure.
func (s *semantic) run(x *Index) {
	defer close(s.done)
	wait := time.Duration(0)
	for {
		if wait > 0 {
			select {
			case <-s.stop:
				return
			case <-time.After(wait):
			}
		}
		keys, texts := s.batch()
		if len(keys) == 0 {
			select {
			case <-s.stop:
				return
			case <-s.wake:
				continue
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		vecs, err := s.Embedder.Embed(ctx, texts)
		cancel()
		if err == nil && len(vecs) != len(texts) {
			err = fmt.Errorf("the embedder returned %d vectors for %d texts", len(vecs), len(texts))
		}
		if err != nil {
			s.failed(fmt.Errorf("embedding %d tool descriptions: %w", len(texts), err))
			wait = min(max(2*wait, retryMin), retryMax)
			s.mu.Lock()
			s.attempted()
			s.mu.Unlock()
			continue
		}
		wait = 0
		x.mu.Lock()
		s.mu.Lock()
		for i, k := range keys {
			if s.refs[k] > 0 && len(vecs[i]) > 0 {
				s.vectors[k] = normalize(vecs[i])
				delete(s.pending, k)
			}
		}
		s.attempted()
		caught, held := len(s.pending) == 0, len(s.vectors)
		s.mu.Unlock()
		x.mu.Unlock()
		if caught && s.OnEmbedded != nil {
			s.OnEmbedded(held)
		}
	}
}

// attempted tells the waiters of WaitEmbedded that an attempt ended;
// s.mu is held.
func (s *semantic) attempted() {
	close(s.settled)
	s.settled = make(chan struct{})
}

// WaitEmbedded waits until every tool of the index has its vector, or ctx
// ends (its error is returned then, with how many tools still wait). An
// index made by New has nothing to wait for.
func (x *Index) WaitEmbedded(ctx context.Context) error {
	if x.sem == nil {
		return nil
	}
	for {
		x.sem.mu.Lock()
		n, ch := len(x.sem.pending), x.sem.settled
		x.sem.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d tool texts not embedded yet: %w", n, ctx.Err())
		case <-ch:
		}
	}
}

// batch returns up to embedBatch pending texts.
func (s *semantic) batch() ([]textKey, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []textKey
	var texts []string
	for k, t := range s.pending {
		if len(keys) == embedBatch {
			break
		}
		keys = append(keys, k)
		texts = append(texts, t)
	}
	return keys, texts
}

func (s *semantic) failed(err error) {
	if s.OnError == nil {
		return
	}
	if n, ok := s.errs.add(time.Now()); ok {
		s.OnError(err, n)
	}
}

// errorLog rate-limits the reports of failures to one a minute.
type errorLog struct {
	mu     sync.Mutex
	last   time.Time
	missed int
}

// add counts a failure at now and says whether to report it, with the
// number of failures the report stands for.
func (l *errorLog) add(now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.missed++
	if !l.last.IsZero() && now.Sub(l.last) < time.Minute {
		return 0, false
	}
	n := l.missed
	l.last, l.missed = now, 0
	return n, true
}

// maxQueryBytes bounds the text of a query sent to the embedder.
const maxQueryBytes = 2000

// SearchContext is SearchVisible, ranked by meaning as well on an index
// made by NewSemantic: the query is embedded (within ctx), the
// fusionDepth visible tools nearest to it by cosine are fused with the
// fusionDepth best lexical matches by reciprocal rank, and the limit best
// are returned. A tool whose vector has not arrived yet is ranked by its
// words only. If the query cannot be embedded (the endpoint fails, or ctx
// ends first), the search is lexical and OnError is told. On an index
// made by New it is SearchVisible.
func (x *Index) SearchContext(ctx context.Context, query string, limit int, visible func(provider, name string) bool) []Hit {
	if x.sem == nil || limit <= 0 || strings.TrimSpace(query) == "" {
		return x.SearchVisible(query, limit, visible)
	}
	qv, err := x.sem.Embedder.Embed(ctx, []string{truncate(query, maxQueryBytes)})
	if err == nil && (len(qv) != 1 || len(qv[0]) == 0) {
		err = fmt.Errorf("the embedder returned %d vectors for 1 query", len(qv))
	}
	if err != nil {
		x.sem.failed(fmt.Errorf("embedding a query (ranked by its words only): %w", err))
		return x.SearchVisible(query, limit, visible)
	}
	q := normalize(qv[0])
	terms := queryTerms(x.rank.analyzer, query)

	x.mu.RLock()
	defer x.mu.RUnlock()
	s := x.getScratch()
	defer x.putScratch(s)
	var lex []candidate
	if len(terms) > 0 {
		lex = x.lexical(s, terms, fusionDepth, visible)
	}
	return x.hits(fuse(lex, x.nearest(q, fusionDepth, visible), limit))
}

// nearest returns the limit visible tools whose vectors are nearest to q
// (normalized) by cosine, best first; x.mu is held.
func (x *Index) nearest(q []float32, limit int, visible func(provider, name string) bool) []candidate {
	var top topK
	for slot := range x.tools.docs {
		d := &x.tools.docs[slot]
		if !d.live {
			continue
		}
		v := x.sem.vectors[d.key]
		if len(v) != len(q) || (visible != nil && !visible(d.provider, d.name)) {
			continue // not embedded yet, or by another model
		}
		top.offer(candidate{slot: int32(slot), score: float64(dot(q, v)), provider: d.provider, name: d.name}, limit)
	}
	return top.sorted()
}

// fuse merges two rankings by reciprocal rank (rrfK, semanticWeight) and
// returns the limit best.
func fuse(lexical, semantic []candidate, limit int) []candidate {
	score := make(map[int32]*candidate, len(lexical)+len(semantic))
	add := func(cs []candidate, w float64) {
		for rank, c := range cs {
			f := score[c.slot]
			if f == nil {
				f = &candidate{slot: c.slot, provider: c.provider, name: c.name}
				score[c.slot] = f
			}
			f.score += w / float64(rrfK+rank+1)
		}
	}
	add(lexical, 1)
	add(semantic, semanticWeight)
	var top topK
	for _, c := range score {
		top.offer(*c, limit)
	}
	return top.sorted()
}

// normalize scales v to length 1 (in place), so that a dot product is the
// cosine.
func normalize(v []float32) []float32 {
	var n float64
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	if n == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// dot is the dot product of two vectors of one length, with four
// accumulators: the loop's additions do not wait for one another (twice
// as fast as one accumulator here; BenchmarkSemanticSearch10k).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
