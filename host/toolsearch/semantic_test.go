//go:build unix

package toolsearch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plughost/plughost/host/embeddings"
	"github.com/plughost/plughost/internal/embedtest"
)

// concepts is a fake embedder: a text's vector counts, per concept, the
// words of that concept it holds, so that texts sharing no word can still
// lie close ("homestay" and "airbnb" are one concept).
type concepts struct {
	mu    sync.Mutex
	fail  error           // when set, every call fails with it
	calls [][]string      // the texts of each call
	block chan struct{}   // when set, calls wait for it to close
	words [][]string      // the concepts
	seen  map[string]bool // texts embedded, to check what is embedded again
}

func newConcepts() *concepts {
	return &concepts{words: [][]string{
		{"homestay", "airbnb", "lodging", "rental"},
		{"weather", "forecast", "rain"},
		{"file", "write", "save"},
	}, seen: map[string]bool{}}
}

func (c *concepts) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	fail, block := c.fail, c.block
	c.calls = append(c.calls, slices.Clone(texts))
	c.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail != nil {
		return nil, fail
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, len(c.words)+1)
		v[len(c.words)] = 0.01 // never the zero vector
		for _, w := range strings.Fields(strings.ToLower(t)) {
			for d, ws := range c.words {
				for _, cw := range ws {
					if strings.HasPrefix(strings.Trim(w, ".,:()"), cw) {
						v[d]++
					}
				}
			}
		}
		out[i] = v
	}
	return out, nil
}

func (c *concepts) embedded() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, call := range c.calls {
		n += len(call)
	}
	return n
}

func waitEmbedded(t *testing.T, x *Index) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := x.WaitEmbedded(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestMeaningFindsWhatWordsMiss(t *testing.T) {
	emb := newConcepts()
	x := NewSemantic(Semantic{Embedder: emb})
	defer x.Close()
	mustSet(t, x, "airbnb", Provider{Title: "Airbnb"}, def("airbnb_search", "Search Airbnb listings"))
	mustSet(t, x, "weather", Provider{}, def("get_forecast", "Weather forecast for a city"))
	waitEmbedded(t, x)

	q := "find me a homestay in Paris"
	if got := names(x.Search(q, 5)); len(got) != 0 {
		t.Errorf("by words, %q finds %v; want nothing (no word shared)", q, got)
	}
	if got := names(x.SearchContext(context.Background(), q, 5, nil)); len(got) == 0 || got[0] != "airbnb/airbnb_search" {
		t.Errorf("by meaning, %q finds %v; want airbnb/airbnb_search first", q, got)
	}
	hidden := func(provider, name string) bool { return provider != "airbnb" }
	if got := names(x.SearchContext(context.Background(), q, 5, hidden)); slices.Contains(got, "airbnb/airbnb_search") {
		t.Errorf("a tool the caller may not see was found by meaning: %v", got)
	}
}

func TestToolsAreFoundByWordsBeforeTheirVectors(t *testing.T) {
	emb := newConcepts()
	emb.block = make(chan struct{})
	x := NewSemantic(Semantic{Embedder: emb})
	defer x.Close()
	mustSet(t, x, "weather", Provider{}, def("get_forecast", "Weather forecast for a city"))
	// The embedder holds every call: the tool has no vector, and queries
	// cannot be embedded either, until ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if got := names(x.SearchContext(ctx, "weather forecast", 5, nil)); !slices.Equal(got, []string{"weather/get_forecast"}) {
		t.Errorf("found %v; want [get_forecast] by its words while the embedder is stuck", got)
	}
	close(emb.block)
	waitEmbedded(t, x)
}

func TestEmbeddingFailuresFallBackToWordsAndAreTold(t *testing.T) {
	emb := newConcepts()
	emb.fail = errors.New("503 Service Unavailable")
	var mu sync.Mutex
	var told []string
	x := NewSemantic(Semantic{Embedder: emb, OnError: func(err error, n int) {
		mu.Lock()
		told = append(told, err.Error())
		mu.Unlock()
	}})
	defer x.Close()
	mustSet(t, x, "weather", Provider{}, def("get_forecast", "Weather forecast for a city"))
	for range 3 {
		if got := names(x.SearchContext(context.Background(), "weather", 5, nil)); !slices.Equal(got, []string{"weather/get_forecast"}) {
			t.Errorf("found %v with a failing embedder; want [get_forecast] by its words", got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || !strings.Contains(told[0], "503 Service Unavailable") {
		t.Errorf("told %q; want one report (at most one a minute) naming the endpoint's error", told)
	}
}

func TestVectorsFollowTheTools(t *testing.T) {
	emb := newConcepts()
	x := NewSemantic(Semantic{Embedder: emb})
	defer x.Close()
	same := def("get_forecast", "Weather forecast for a city")
	mustSet(t, x, "weather", Provider{}, same)
	waitEmbedded(t, x)
	mustSet(t, x, "weather", Provider{}, same) // a reload that changes nothing
	waitEmbedded(t, x)
	if n := emb.embedded(); n != 1 {
		t.Errorf("%d texts embedded for one unchanged tool set twice; want 1", n)
	}
	mustSet(t, x, "weather", Provider{}, def("get_rain", "Rain radar"))
	waitEmbedded(t, x)
	x.mu.RLock()
	n := len(x.sem.vectors)
	x.mu.RUnlock()
	if n != 1 {
		t.Errorf("%d vectors held for one tool; want 1 (the replaced tool's dropped)", n)
	}
	x.Remove("weather")
	x.mu.RLock()
	n = len(x.sem.vectors) + len(x.sem.refs)
	x.mu.RUnlock()
	if n != 0 {
		t.Errorf("vectors or counts held after the provider left: %d", n)
	}
	if got := x.SearchContext(context.Background(), "rain", 5, nil); len(got) != 0 {
		t.Errorf("a removed tool was found: %v", names(got))
	}
}

func TestCloseStopsAStuckEmbedding(t *testing.T) {
	emb := newConcepts()
	emb.block = make(chan struct{}) // never closed: only Close ends the call
	x := NewSemantic(Semantic{Embedder: emb})
	mustSet(t, x, "weather", Provider{}, def("get_forecast", "Weather forecast"))
	x.Close()
	x.Close() // twice is fine
}

// TestARealModelFindsWhatWordsMiss runs the real model of
// conformance/embeddings.mjs (the Universal Sentence Encoder lite): a
// query that shares no word with the tool it needs finds it by meaning.
func TestARealModelFindsWhatWordsMiss(t *testing.T) {
	c, err := embeddings.New(embeddings.Options{URL: embedtest.Start(t), Model: embedtest.Model, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	x := NewSemantic(Semantic{Embedder: c, OnError: func(err error, _ int) { t.Errorf("embedding failed: %v", err) }})
	defer x.Close()
	mustSet(t, x, "airbnb", Provider{Title: "Airbnb", Description: "Search Airbnb listings and get their details."},
		def("airbnb_search", "Search for Airbnb listings with various filters and pagination", "location", "the place to stay", "checkin", "the date of arrival"))
	mustSet(t, x, "weather", Provider{Title: "Weather"}, def("get_weather", "Get the current weather of a city", "city", "the city"))
	mustSet(t, x, "files", Provider{Title: "Filesystem"}, def("write_file", "Create a new file or overwrite an existing one", "path", "where", "content", "what to write"))
	waitEmbedded(t, x)

	q := "homestays in Paris for three nights"
	if got := names(x.Search(q, 3)); len(got) != 0 {
		t.Fatalf("by words alone the query finds %v: the test proves nothing", got)
	}
	if got := names(x.SearchContext(context.Background(), q, 1, nil)); !slices.Equal(got, []string{"airbnb/airbnb_search"}) {
		t.Errorf("by meaning, the best tool for %q is %v; want [airbnb/airbnb_search]", q, got)
	}
}
