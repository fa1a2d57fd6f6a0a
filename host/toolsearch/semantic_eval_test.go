//go:build unix

package toolsearch

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/plughost/plughost/host/embeddings"
	"github.com/plughost/plughost/internal/embedtest"
	"github.com/plughost/plughost/internal/toolsearcheval"
)

// BenchmarkSemanticRanking measures the semantic ranking (NewSemantic,
// SearchContext) with a real sentence-embedding model, the Universal
// Sentence Encoder lite served by conformance/embeddings.mjs, on the
// development tasks of ../shared/toolsearch, and holds it to finding
// more of the tools the tasks need in the top 5 than the words alone do
// (0.437 against 0.393 when written), and no fewer tasks with one of them.
// It is a benchmark, run by make bench, because embedding the 527 tools
// on this small model takes about a minute on 2 cores; it logs the table
// and reports recall and hit at 5 of both rankings.
func BenchmarkSemanticRanking(t *testing.B) {
	data, err := toolsearcheval.Load()
	if err != nil {
		t.Fatalf("the evaluation data (../shared/toolsearch beside the repository): %v", err)
	}
	c, err := embeddings.New(embeddings.Options{URL: embedtest.Start(t), Model: embedtest.Model, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	x := NewSemantic(Semantic{Embedder: c, OnError: func(err error, n int) { t.Errorf("embedding failed %d times: %v", n, err) }})
	defer x.Close()
	for _, s := range data.Servers {
		defs := make([]json.RawMessage, len(s.Tools))
		for i, tool := range s.Tools {
			defs[i] = tool.Def
		}
		if err := x.Set(s.Name, Provider{Title: s.Title, Description: s.Description}, defs); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	if err := x.WaitEmbedded(ctx); err != nil {
		t.Fatal(err)
	}
	embedded := time.Since(start)

	ids := func(hits []Hit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.Provider+"::"+h.Name)
		}
		return out
	}
	lexical := toolsearcheval.Evaluate(data.Queries, func(q string, k int) []string { return ids(x.Search(q, k)) })
	fused := toolsearcheval.Evaluate(data.Queries, func(q string, k int) []string {
		return ids(x.SearchContext(ctx, q, k, nil))
	})
	semanticOnly := toolsearcheval.Evaluate(data.Queries, func(q string, k int) []string {
		qv, err := c.Embed(ctx, []string{q})
		if err != nil {
			t.Fatal(err)
		}
		x.mu.RLock()
		defer x.mu.RUnlock()
		return ids(x.hits(x.nearest(normalize(qv[0]), k, nil)))
	})
	t.Logf("%d tools embedded in %v; %d queries\n%-34s %s\n%-34s %v\n%-34s %v\n%-34s %v", data.Tools(), embedded.Round(time.Millisecond), len(data.Queries),
		"", toolsearcheval.Header,
		"words (New)", lexical,
		"meaning alone (nearest by cosine)", semanticOnly,
		fmt.Sprintf("fused (RRF k %d, weight %.1f)", rrfK, semanticWeight), fused)

	lr, lh := lexical.At(5)
	fr, fh := fused.At(5)
	t.ReportMetric(lr, "recall@5-words")
	t.ReportMetric(fr, "recall@5-fused")
	t.ReportMetric(lh, "hit@5-words")
	t.ReportMetric(fh, "hit@5-fused")
	if fr <= lr {
		t.Errorf("recall@5 fused %.3f, by words %.3f: the model must add to the words", fr, lr)
	}
	if fh < lh {
		t.Errorf("hit@5 fused %.3f, by words %.3f: must not fall below", fh, lh)
	}
}
