package toolsearch

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/plughost/plughost/internal/toolsearcheval"
)

// TestRanking measures the ranker on the development tasks of
// ../shared/toolsearch and holds it to two things:
//
//   - the plain BM25 written below reproduces the README's figures
//     (recall@5 0.376, recall@10 0.425, hit@5 0.633): that checks the
//     data's loading and the metric code, which judge everything else;
//   - the index's ranking beats that BM25 on recall@5 (0.393 against
//     0.376 when written) and does not fall below it on hit@5 (0.633 both:
//     see the package doc for why hit@5 does not move).
//
// It logs (go test -v -run TestRanking) the table of the package doc: the
// baseline, the ranker, and each feature's contribution, taken away from
// the ranker one at a time and added to a bare BM25F one at a time.
func TestRanking(t *testing.T) {
	data, err := toolsearcheval.Load()
	if err != nil {
		t.Fatalf("the evaluation data (../shared/toolsearch beside the repository): %v", err)
	}

	base := toolsearcheval.Evaluate(data.Queries, newPlainBM25(data).search)
	final := evaluate(data, defaultRanking)

	var rows []string
	row := func(name string, m toolsearcheval.Metrics) {
		rows = append(rows, fmt.Sprintf("%-34s %v", name, m))
	}
	row("plain BM25 (the README's)", base)
	row("this package's ranking", final)
	rows = append(rows, "taken away from the ranking:")
	for _, v := range variants() {
		row("  - "+v.name, evaluate(data, v.off(defaultRanking)))
	}
	rows = append(rows, "added to a bare BM25F, in order:")
	r := bareRanking()
	row("  bare BM25F (all off, weights 1)", evaluate(data, r))
	for _, v := range variants() {
		r = v.on(r)
		row("  + "+v.name, evaluate(data, r))
	}
	rows = append(rows, fmt.Sprintf("sensitivity of the provider's share (%g):", defaultRanking.provider))
	for _, share := range []float64{0.5, 2} {
		r := defaultRanking
		r.provider = share
		row(fmt.Sprintf("  provider %.2f", share), evaluate(data, r))
	}
	t.Logf("%d queries, %d tools of %d servers\n%-34s %s\n%s", len(data.Queries), data.Tools(), len(data.Servers),
		"", toolsearcheval.Header, strings.Join(rows, "\n"))

	// The baseline must be the README's: else the metrics are wrong.
	for _, want := range []struct {
		k           int
		recall, hit float64
	}{{5, 0.376, 0.633}, {10, 0.425, math.NaN()}} {
		recall, hit := base.At(want.k)
		if math.Abs(recall-want.recall) > 0.015 || (!math.IsNaN(want.hit) && math.Abs(hit-want.hit) > 0.015) {
			t.Errorf("plain BM25 @%d: recall %.3f, hit %.3f; the README says %.3f, %.3f", want.k, recall, hit, want.recall, want.hit)
		}
	}
	// The ranking must find more of the tools a task needs in the top 5,
	// and no fewer tasks with at least one of them.
	br, bh := base.At(5)
	fr, fh := final.At(5)
	if fr <= br {
		t.Errorf("recall@5 %.3f, plain BM25's %.3f: the ranking must beat it", fr, br)
	}
	if fh < bh {
		t.Errorf("hit@5 %.3f, plain BM25's %.3f: the ranking must not fall below it", fh, bh)
	}
}

// evaluate builds an index of the corpus, one provider per server, ranked
// by r, and scores its searches.
func evaluate(data *toolsearcheval.Data, r ranking) toolsearcheval.Metrics {
	x := newIndex(r)
	for _, s := range data.Servers {
		defs := make([]json.RawMessage, len(s.Tools))
		for i, t := range s.Tools {
			defs[i] = t.Def
		}
		if err := x.Set(s.Name, Provider{Title: s.Title, Description: s.Description}, defs); err != nil {
			panic(err)
		}
	}
	return toolsearcheval.Evaluate(data.Queries, func(q string, k int) []string {
		var ids []string
		for _, h := range x.Search(q, k) {
			ids = append(ids, h.Provider+"::"+h.Name)
		}
		return ids
	})
}

// A variant is one feature of the ranking, for the ablation.
type variant struct {
	name    string
	on, off func(ranking) ranking
}

func variants() []variant {
	flag := func(name string, set func(*analyzer, bool)) variant {
		return variant{name,
			func(r ranking) ranking { set(&r.analyzer, true); return r },
			func(r ranking) ranking { set(&r.analyzer, false); return r }}
	}
	return []variant{
		flag("identifier splitting", func(a *analyzer, v bool) { a.split = v }),
		flag("stop words", func(a *analyzer, v bool) { a.stop = v }),
		flag("stemming", func(a *analyzer, v bool) { a.stem = v }),
		flag("CJK bigrams", func(a *analyzer, v bool) { a.bigrams = v }),
		{"field weights",
			func(r ranking) ranking { r.weights = defaultRanking.weights; return r },
			func(r ranking) ranking { r.weights = flatWeights(); return r }},
		{"provider stage",
			func(r ranking) ranking { r.provider = defaultRanking.provider; return r },
			func(r ranking) ranking { r.provider = 0; return r }},
	}
}

func flatWeights() [nFields]float64 {
	var w [nFields]float64
	for f := range w {
		w[f] = 1
	}
	return w
}

// bareRanking is BM25F over the same fields with every feature off: each
// field weighs 1, identifiers and CJK runs are whole terms, no stop
// words, no stemming, and nothing of the provider is read.
func bareRanking() ranking {
	return ranking{weights: flatWeights(), k1: defaultRanking.k1, b: defaultRanking.b}
}

// plainBM25 is the README's baseline, written independently of the index:
// one text per tool (its name, description, server name, and its
// parameters' names and descriptions), split into runs of [a-z0-9] after
// splitting camelCase, Lucene's English stop words dropped, BM25 with k1
// 1.2, b 0.75 and Lucene's IDF, each query term counted once.
type plainBM25 struct {
	ids  []string
	tf   []map[string]int
	len  []float64
	avg  float64
	df   map[string]int
	stop map[string]bool
}

var (
	camel = regexp.MustCompile(`([a-z0-9])([A-Z])`)
	alnum = regexp.MustCompile(`[a-z0-9]+`)
)

func newPlainBM25(data *toolsearcheval.Data) *plainBM25 {
	b := &plainBM25{df: make(map[string]int), stop: make(map[string]bool)}
	for _, w := range strings.Fields("a an and are as at be but by for if in into is it no not of on or such that the their then there these they this to was will with") {
		b.stop[w] = true
	}
	for _, s := range data.Servers {
		for _, t := range s.Tools {
			var def struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				InputSchema struct {
					Properties map[string]struct {
						Description string `json:"description"`
					} `json:"properties"`
				} `json:"inputSchema"`
			}
			if err := json.Unmarshal(t.Def, &def); err != nil {
				panic(err)
			}
			text := []string{def.Name, def.Description, s.Name}
			for name, p := range def.InputSchema.Properties {
				text = append(text, name, p.Description)
			}
			terms := b.terms(strings.Join(text, " "))
			tf := make(map[string]int)
			for _, w := range terms {
				tf[w]++
			}
			for w := range tf {
				b.df[w]++
			}
			b.ids = append(b.ids, t.ID)
			b.tf = append(b.tf, tf)
			b.len = append(b.len, float64(len(terms)))
			b.avg += float64(len(terms))
		}
	}
	b.avg /= float64(len(b.ids))
	return b
}

func (b *plainBM25) terms(text string) []string {
	var out []string
	for _, w := range alnum.FindAllString(strings.ToLower(camel.ReplaceAllString(text, "$1 $2")), -1) {
		if !b.stop[w] {
			out = append(out, w)
		}
	}
	return out
}

func (b *plainBM25) search(query string, k int) []string {
	terms := b.terms(query)
	slices.Sort(terms)
	terms = slices.Compact(terms)
	n := float64(len(b.ids))
	score := make([]float64, len(b.ids))
	for _, w := range terms {
		df := float64(b.df[w])
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for i, tf := range b.tf {
			if f := float64(tf[w]); f > 0 {
				score[i] += idf * f * 2.2 / (f + 1.2*(0.25+0.75*b.len[i]/b.avg))
			}
		}
	}
	order := make([]int, len(b.ids))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(score[j], score[i]) })
	var ids []string
	for _, i := range order[:k] {
		if score[i] > 0 {
			ids = append(ids, b.ids[i])
		}
	}
	return ids
}
