package toolsearch

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/plughost/plughost/internal/toolsearcheval"
)

// Copies of the corpus in the benchmarks' index: 19 × 527 = 10,013 tools
// of 1,330 providers.
const copies = 19

// shortQueries are what a model sends a search tool: a few words.
var shortQueries = []string{"read file", "current time", "stock price history", "convert docx to pdf",
	"search papers", "weather forecast", "bar chart", "send email", "geocode address", "git diff"}

// bigIndex returns an index of copies of the corpus, each server under
// another provider name per copy.
func bigIndex(tb testing.TB, data *toolsearcheval.Data) *Index {
	return fill(tb, New(), data)
}

// fill sets copies of the corpus in x.
func fill(tb testing.TB, x *Index, data *toolsearcheval.Data) *Index {
	for c := range copies {
		for _, s := range data.Servers {
			if err := x.Set(fmt.Sprintf("%s#%d", s.Name, c), Provider{Title: s.Title, Description: s.Description}, defs(s)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return x
}

func defs(s toolsearcheval.Server) []json.RawMessage {
	out := make([]json.RawMessage, len(s.Tools))
	for i, t := range s.Tools {
		out[i] = t.Def
	}
	return out
}

func loadData(b *testing.B) *toolsearcheval.Data {
	data, err := toolsearcheval.Load()
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkSearch10k searches an index of 10,013 tools for the top 10,
// with the 49 development tasks (long: 20 to 60 words) and with short
// queries, and reports the median and 99th percentile of one search.
func BenchmarkSearch10k(b *testing.B) {
	data := loadData(b)
	x := bigIndex(b, data)
	var tasks []string
	for _, q := range data.Queries {
		tasks = append(tasks, q.Text)
	}
	for _, bench := range []struct {
		name    string
		queries []string
	}{{"tasks", tasks}, {"short", shortQueries}} {
		b.Run(bench.name, func(b *testing.B) {
			b.ReportAllocs()
			var took []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				x.Search(bench.queries[i%len(bench.queries)], 10)
				took = append(took, time.Since(start))
				i++
			}
			reportPercentiles(b, took)
		})
	}
}

// randomVectors is an Embedder of pseudo-random vectors of 512
// dimensions (the Universal Sentence Encoder's), answered at once: what a
// semantic search costs plughost itself, the endpoint's time left out.
type randomVectors struct{}

func (randomVectors) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		r := rand.New(rand.NewPCG(uint64(keyOf(t)), 1))
		v := make([]float32, 512)
		for d := range v {
			v[d] = float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkSemanticSearch10k is BenchmarkSearch10k on an index that
// ranks by meaning as well (NewSemantic): the lexical search, the cosine
// of the query with 10,013 vectors of 512 dimensions, and the fusion; the
// query's embedding is instant here (randomVectors), so the figure is
// plughost's part, to which the endpoint's time adds.
func BenchmarkSemanticSearch10k(b *testing.B) {
	data := loadData(b)
	x := fill(b, NewSemantic(Semantic{Embedder: randomVectors{}}), data)
	defer x.Close()
	if err := x.WaitEmbedded(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var took []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		x.SearchContext(context.Background(), shortQueries[i%len(shortQueries)], 10, nil)
		took = append(took, time.Since(start))
		i++
	}
	reportPercentiles(b, took)
}

// reportPercentiles reports the median and the 99th percentile of took in
// microseconds.
func reportPercentiles(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkSet1000 replaces the 1,000 tools of one provider in an index
// that also holds 10,013 others: what a plugin's reload costs, from its
// tool list to its tools being found.
func BenchmarkSet1000(b *testing.B) {
	data := loadData(b)
	x := bigIndex(b, data)
	var all []json.RawMessage
	for _, s := range data.Servers {
		all = append(all, defs(s)...)
	}
	versions := [2][]json.RawMessage{}
	for v := range versions {
		for i := range 1000 {
			var d map[string]any
			if err := json.Unmarshal(all[i%len(all)], &d); err != nil {
				b.Fatal(err)
			}
			d["name"] = fmt.Sprintf("%s_v%d_%d", d["name"], v, i)
			enc, _ := json.Marshal(d)
			versions[v] = append(versions[v], enc)
		}
	}
	info := Provider{Title: "Big", Description: "A provider of a thousand tools."}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := x.Set("big", info, versions[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
