package blevecmp

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/char/regexp"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/camelcase"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/stop"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/analysis/tokenmap"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/plughost/plughost/host/toolsearch"
	"github.com/plughost/plughost/internal/toolsearcheval"
)

// Field boosts, toolsearch's weights: name 3, title 3, description 1,
// parameters 0.5. "provider" (its name, title and description) is a field
// of each tool in the first form, its own index in the second.
var boosts = map[string]float64{"name": 3, "title": 3, "description": 1, "params": 0.5}

// toolsearch's stop words (Lucene's English set).
const stopWords = "a an and are as at be but by for if in into is it no not of on or such that the their then there these they this to was will with"

// newMapping is toolsearch's analysis in bleve's parts: '_', '-' and '.'
// become spaces, Unicode word breaks, camelCase split, lower case, the
// same stop words, Snowball's English stemmer, CJK bigrams; BM25 scoring.
func newMapping() *mapping.IndexMappingImpl {
	m := bleve.NewIndexMapping()
	m.ScoringModel = index.BM25Scoring
	must(m.AddCustomCharFilter("ident", map[string]any{"type": regexp.Name, "regexp": `[_\-.]`, "replace": " "}))
	must(m.AddCustomTokenMap("lucene_stop", map[string]any{"type": tokenmap.Name, "tokens": anys(strings.Fields(stopWords))}))
	must(m.AddCustomTokenFilter("stop_lucene", map[string]any{"type": stop.Name, "stop_token_map": "lucene_stop"}))
	must(m.AddCustomAnalyzer("tools", map[string]any{
		"type":          custom.Name,
		"char_filters":  []string{"ident"},
		"tokenizer":     unicode.Name,
		"token_filters": []string{camelcase.Name, lowercase.Name, "stop_lucene", en.SnowballStemmerName, cjk.BigramName},
	}))
	m.DefaultAnalyzer = "tools"
	return m
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// searcher is bleve holding the corpus: tools, and providers apart when
// the provider is a stage.
type searcher struct {
	tools, providers bleve.Index
	fields           []string
	toolOf           map[string]string // document ID → "<provider>::<tool>"
}

type toolDoc struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Params      string `json:"params"`
	Provider    string `json:"provider"`
}

// newSearcher indexes copies of the corpus, each under other provider
// names. stage: providers in their own index, their score added to their
// tools' (toolsearch's way); else a provider is a field of its tools,
// boost 1.
func newSearcher(tb testing.TB, data *toolsearcheval.Data, copies int, stage bool) *searcher {
	tools, err := bleve.NewMemOnly(newMapping())
	if err != nil {
		tb.Fatal(err)
	}
	s := &searcher{tools: tools, toolOf: map[string]string{}, fields: slices.Sorted(maps.Keys(boosts))}
	if stage {
		if s.providers, err = bleve.NewMemOnly(newMapping()); err != nil {
			tb.Fatal(err)
		}
	} else {
		s.fields = append(s.fields, "provider")
	}
	for c := range copies {
		batch := tools.NewBatch()
		for _, srv := range data.Servers {
			provider := fmt.Sprintf("%s#%d", srv.Name, c)
			about := strings.Join([]string{srv.Name, srv.Title, srv.Description}, " ")
			if stage {
				must(s.providers.Index(provider, toolDoc{Name: srv.Name, Title: srv.Title, Description: srv.Description}))
			}
			for _, t := range srv.Tools {
				doc := readDef(tb, t.Def)
				if !stage {
					doc.Provider = about
				}
				id := provider + "::" + doc.Name
				s.toolOf[id] = srv.Name + "::" + doc.Name
				must(batch.Index(id, doc))
			}
		}
		must(tools.Batch(batch))
	}
	return s
}

func readDef(tb testing.TB, def json.RawMessage) toolDoc {
	var d struct {
		Name, Title, Description string
		InputSchema              struct {
			Properties map[string]struct{ Title, Description string }
		}
	}
	if err := json.Unmarshal(def, &d); err != nil {
		tb.Fatal(err)
	}
	var params []string
	for _, name := range slices.Sorted(maps.Keys(d.InputSchema.Properties)) {
		p := d.InputSchema.Properties[name]
		params = append(params, name, p.Title, p.Description)
	}
	return toolDoc{Name: d.Name, Title: d.Title, Description: d.Description, Params: strings.Join(params, " ")}
}

func fieldQuery(text string, fields []string) query.Query {
	var qs []query.Query
	for _, f := range fields {
		mq := bleve.NewMatchQuery(text)
		mq.SetField(f)
		boost, ok := boosts[f]
		if !ok {
			boost = 1 // provider
		}
		mq.SetBoost(boost)
		qs = append(qs, mq)
	}
	return bleve.NewDisjunctionQuery(qs...)
}

// search returns the top k as "<server>::<tool>".
func (s *searcher) search(tb testing.TB, text string, k int) []string {
	size := k
	var lift map[string]float64
	if s.providers != nil {
		// Every matching provider, then enough tools for the lifted ones to
		// compete: toolsearch scores every tool of a matching provider.
		res, err := s.providers.Search(bleve.NewSearchRequestOptions(fieldQuery(text, []string{"name", "title", "description"}), 10000, 0, false))
		if err != nil {
			tb.Fatal(err)
		}
		lift = map[string]float64{}
		for _, h := range res.Hits {
			lift[h.ID] = h.Score
		}
		size = 10000
	}
	res, err := s.tools.Search(bleve.NewSearchRequestOptions(fieldQuery(text, s.fields), size, 0, false))
	if err != nil {
		tb.Fatal(err)
	}
	type scored struct {
		id    string
		score float64
	}
	var all []scored
	for _, h := range res.Hits {
		provider, _, _ := strings.Cut(h.ID, "::")
		all = append(all, scored{h.ID, h.Score + lift[provider]})
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	var ids []string
	for _, a := range all[:min(k, len(all))] {
		ids = append(ids, s.toolOf[a.id])
	}
	return ids
}

func load(tb testing.TB) *toolsearcheval.Data {
	data, err := toolsearcheval.Load()
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func ours(tb testing.TB, data *toolsearcheval.Data, copies int) *toolsearch.Index {
	x := toolsearch.New()
	for c := range copies {
		for _, srv := range data.Servers {
			var defs []json.RawMessage
			for _, t := range srv.Tools {
				defs = append(defs, t.Def)
			}
			if err := x.Set(fmt.Sprintf("%s#%d", srv.Name, c), toolsearch.Provider{Title: srv.Title, Description: srv.Description}, defs); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return x
}

func oursSearch(x *toolsearch.Index) func(string, int) []string {
	return func(q string, k int) []string {
		var ids []string
		for _, h := range x.Search(q, k) {
			server, _, _ := strings.Cut(h.Provider, "#")
			ids = append(ids, server+"::"+h.Name)
		}
		return ids
	}
}

// BenchmarkQuality reports recall and hit at 1, 5 and 10 on the
// development tasks for toolsearch and for bleve in both forms (b.N does
// not matter: one evaluation).
func BenchmarkQuality(b *testing.B) {
	data := load(b)
	report := func(b *testing.B, m toolsearcheval.Metrics) {
		for b.Loop() {
		}
		for i, k := range toolsearcheval.Ks {
			b.ReportMetric(m.Recall[i], fmt.Sprintf("R@%d", k))
			b.ReportMetric(m.Hit[i], fmt.Sprintf("H@%d", k))
		}
		b.Logf("%s\n%v", toolsearcheval.Header, m)
	}
	b.Run("toolsearch", func(b *testing.B) {
		report(b, toolsearcheval.Evaluate(data.Queries, oursSearch(ours(b, data, 1))))
	})
	for _, stage := range []bool{false, true} {
		b.Run(fmt.Sprintf("bleve/providerStage=%v", stage), func(b *testing.B) {
			s := newSearcher(b, data, 1, stage)
			report(b, toolsearcheval.Evaluate(data.Queries, func(q string, k int) []string { return s.search(b, q, k) }))
		})
	}
}

// BenchmarkSearch10k: the top 10 of 10,013 tools (19 copies of the
// corpus) for the development tasks, toolsearch and bleve in the same run.
func BenchmarkSearch10k(b *testing.B) {
	data := load(b)
	run := func(b *testing.B, search func(string, int) []string) {
		b.ReportAllocs()
		var took []time.Duration
		i := 0
		for b.Loop() {
			start := time.Now()
			search(data.Queries[i%len(data.Queries)].Text, 10)
			took = append(took, time.Since(start))
			i++
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "p99-µs")
	}
	b.Run("toolsearch", func(b *testing.B) { run(b, oursSearch(ours(b, data, 19))) })
	b.Run("bleve/providerStage=false", func(b *testing.B) {
		s := newSearcher(b, data, 19, false)
		run(b, func(q string, k int) []string { return s.search(b, q, k) })
	})
}
