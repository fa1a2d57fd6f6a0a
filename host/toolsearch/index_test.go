package toolsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// def returns an MCP Tool object.
func def(name, description string, params ...string) json.RawMessage {
	props := map[string]any{}
	for i := 0; i+1 < len(params); i += 2 {
		props[params[i]] = map[string]any{"type": "string", "description": params[i+1]}
	}
	b, err := json.Marshal(map[string]any{"name": name, "description": description,
		"inputSchema": map[string]any{"type": "object", "properties": props}})
	if err != nil {
		panic(err)
	}
	return b
}

// names returns "provider/name" of each hit.
func names(hits []Hit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, h.Provider+"/"+h.Name)
	}
	return out
}

func mustSet(t *testing.T, x *Index, provider string, info Provider, tools ...json.RawMessage) {
	t.Helper()
	if err := x.Set(provider, info, tools); err != nil {
		t.Fatal(err)
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	x := New()
	mustSet(t, x, "files", Provider{Title: "Filesystem", Description: "Read and write files on disk."},
		def("read_file", "Read the complete contents of a file.", "path", "Path of the file"),
		def("write_file", "Create a new file or overwrite one.", "path", "Path of the file", "content", "Text to write"),
		def("list_directory", "List the entries of a directory.", "path", "Directory path"))
	mustSet(t, x, "clock", Provider{Title: "Time", Description: "Time and timezone conversion."},
		def("get_current_time", "Get the current time in a timezone.", "timezone", "IANA name"),
		def("convert_time", "Convert a time between timezones."))
	mustSet(t, x, "stocks", Provider{Title: "Yahoo Finance", Description: "Stock prices, news and company data."},
		def("get_news", "Get news for a symbol.", "symbol", "Ticker"),
		def("get_price", "Get a price for a symbol.", "symbol", "Ticker"))

	tests := map[string]struct {
		query string
		limit int
		want  []string
	}{
		"by the name's words":                 {"current time", 1, []string{"clock/get_current_time"}},
		"stemmed":                             {"writing files", 1, []string{"files/write_file"}},
		"a parameter adds to the description": {"timezone", 2, []string{"clock/get_current_time", "clock/convert_time"}},
		"the provider lifts its tools":        {"yahoo finance", 5, []string{"stocks/get_news", "stocks/get_price"}},
		"the provider's description lifts its tools, the tool's own match orders them": {"company news", 2,
			[]string{"stocks/get_news", "stocks/get_price"}},
		"nothing matches":   {"weather forecast", 5, []string{}},
		"only stop words":   {"the of and", 5, []string{}},
		"limit 0":           {"file", 0, []string{}},
		"limit cuts":        {"file", 2, []string{"files/read_file", "files/write_file"}},
		"an identifier":     {"list_directory", 1, []string{"files/list_directory"}},
		"a camelCase query": {"convertTime", 1, []string{"clock/convert_time"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hits := x.Search(tt.query, tt.limit)
			if diff := cmp.Diff(tt.want, names(hits)); diff != "" {
				t.Errorf("Search(%q, %d) (-want +got):\n%s", tt.query, tt.limit, diff)
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Score > hits[i-1].Score {
					t.Errorf("hit %d scores %v, more than hit %d's %v", i, hits[i].Score, i-1, hits[i-1].Score)
				}
			}
		})
	}
}

func TestHitCarriesTheDefinition(t *testing.T) {
	t.Parallel()
	x := New()
	d := def("get_weather", "Weather for a city.", "city", "City name")
	mustSet(t, x, "wx", Provider{}, d)
	hits := x.Search("weather", 1)
	if len(hits) != 1 || string(hits[0].Def) != string(d) || hits[0].Score <= 0 {
		t.Fatalf("Search = %+v, want get_weather with its definition and a positive score", hits)
	}
}

func TestReplaceAndRemove(t *testing.T) {
	t.Parallel()
	x := New()
	mustSet(t, x, "p", Provider{}, def("send_email", "Send an email."), def("read_inbox", "Read the inbox."))
	mustSet(t, x, "q", Provider{}, def("send_sms", "Send a text message."))

	mustSet(t, x, "p", Provider{}, def("post_message", "Post a chat message."))
	if got := names(x.Search("email inbox", 10)); len(got) != 0 {
		t.Errorf("after Set replaced p's tools, the old ones are still found: %v", got)
	}
	if diff := cmp.Diff([]string{"p/post_message", "q/send_sms"}, names(x.Search("message", 10))); diff != "" {
		t.Errorf("after Set replaced p's tools (-want +got):\n%s", diff)
	}

	x.Remove("p")
	if diff := cmp.Diff([]string{"q/send_sms"}, names(x.Search("message", 10))); diff != "" {
		t.Errorf("after Remove(p) (-want +got):\n%s", diff)
	}
	x.Remove("p") // again: nothing
	x.Remove("nobody")

	mustSet(t, x, "q", Provider{}) // no tools: removed
	if got := names(x.Search("message", 10)); len(got) != 0 {
		t.Errorf("after Set(q) with no tools: %v", got)
	}
}

func TestSetRefusesABadDefinitionWhole(t *testing.T) {
	t.Parallel()
	x := New()
	mustSet(t, x, "p", Provider{}, def("send_email", "Send an email."))
	err := x.Set("p", Provider{}, []json.RawMessage{def("post_message", "Post."), json.RawMessage(`{"description": "no name"}`)})
	if !errors.Is(err, ErrInvalidTool) {
		t.Fatalf("Set with a nameless tool: %v, want ErrInvalidTool", err)
	}
	if diff := cmp.Diff([]string{"p/send_email"}, names(x.Search("send email post", 10))); diff != "" {
		t.Errorf("after a refused Set, the index changed (-want +got):\n%s", diff)
	}
}

func TestSearchVisible(t *testing.T) {
	t.Parallel()
	x := New()
	for _, p := range []string{"a", "b", "c"} {
		mustSet(t, x, p, Provider{}, def("search_web", "Search the web."), def("search_news", "Search the news."))
	}
	onlyB := func(provider, name string) bool { return provider == "b" }
	if diff := cmp.Diff([]string{"b/search_news", "b/search_web"}, names(x.SearchVisible("search", 2, onlyB))); diff != "" {
		t.Errorf("SearchVisible for b alone (-want +got):\n%s", diff)
	}
	noNews := func(provider, name string) bool { return name != "search_news" }
	if diff := cmp.Diff([]string{"a/search_web", "b/search_web", "c/search_web"}, names(x.SearchVisible("search", 3, noNews))); diff != "" {
		t.Errorf("SearchVisible without search_news (-want +got):\n%s", diff)
	}
}

// TestChurnMatchesAFreshIndex updates an index many times at random
// (slots freed and reused, postings rewritten) and checks that it answers
// exactly as an index built at once from the same final tools.
func TestChurnMatchesAFreshIndex(t *testing.T) {
	t.Parallel()
	words := []string{"read", "write", "file", "stock", "price", "news", "weather", "city", "map", "route",
		"image", "resize", "email", "send", "calendar", "event", "paper", "search", "time", "zone"}
	rng := rand.New(rand.NewPCG(1, 2))
	text := func(n int) string {
		s := ""
		for range n {
			s += words[rng.IntN(len(words))] + " "
		}
		return s
	}
	type version struct {
		info  Provider
		tools []json.RawMessage
	}
	randomVersion := func() version {
		v := version{info: Provider{Title: text(2), Description: text(8)}}
		for i := range 1 + rng.IntN(6) {
			v.tools = append(v.tools, def(fmt.Sprintf("t%d_%s", i, words[rng.IntN(len(words))]), text(6), "arg", text(3)))
		}
		return v
	}

	churned := New()
	final := map[string]version{}
	for range 150 {
		p := fmt.Sprintf("p%d", rng.IntN(12))
		if rng.IntN(4) == 0 {
			churned.Remove(p)
			delete(final, p)
			continue
		}
		v := randomVersion()
		mustSet(t, churned, p, v.info, v.tools...)
		final[p] = v
	}
	fresh := New()
	for p, v := range final {
		mustSet(t, fresh, p, v.info, v.tools...)
	}
	for range 50 {
		q := text(3)
		if diff := cmp.Diff(fresh.Search(q, 20), churned.Search(q, 20), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("Search(%q): the churned index differs from a fresh one (-fresh +churned):\n%s", q, diff)
		}
	}
}

// TestConcurrentUse searches while providers are replaced and removed
// (run with -race). Each provider's two versions offer tools named after
// the version, so a hit from a half-made update shows as a name of one
// version with the definition of the other.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	x := New()
	versions := func(p string, v int) []json.RawMessage {
		var tools []json.RawMessage
		for i := range 20 {
			tools = append(tools, def(fmt.Sprintf("v%d_tool%d", v, i), fmt.Sprintf("version %d search tool of %s", v, p)))
		}
		return tools
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			p := fmt.Sprintf("p%d", w)
			for i := range 200 {
				if i%7 == 6 {
					x.Remove(p)
					continue
				}
				if err := x.Set(p, Provider{Description: "tools"}, versions(p, i%2)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 300 {
				for _, h := range x.Search("search tool version", 10) {
					var d struct{ Name string }
					if err := json.Unmarshal(h.Def, &d); err != nil || d.Name != h.Name {
						t.Errorf("hit %s/%s carries the definition of %q (%v)", h.Provider, h.Name, d.Name, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
