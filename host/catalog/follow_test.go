package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/toolsearch"
)

// following returns a channel that gets each call of a FollowTools of c,
// as provider → exposed names, and stops following at the test's end.
func following(t *testing.T, c *Catalog) <-chan map[string][]string {
	t.Helper()
	calls := make(chan map[string][]string, 10)
	stop := c.FollowTools(func(ps []ProviderTools) {
		m := map[string][]string{}
		for _, p := range ps {
			m[p.Provider] = []string{}
			for _, raw := range p.Tools {
				m[p.Provider] = append(m[p.Provider], nameOf(t, raw))
			}
		}
		calls <- m
	})
	t.Cleanup(stop)
	return calls
}

func TestFollowTools(t *testing.T) {
	f := newFixture(t, nil)
	f.cat.Set(newProvider("a", "x", "y"))
	calls := following(t, f.cat)
	check := func(what string, want map[string][]string) {
		t.Helper()
		if got := await(t, calls, what); !equalNames(got, want) {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
	check("the first call", map[string][]string{"a": {"x", "y"}})

	// b's x clashes with a's: a keeps its names (they are sticky), b's
	// is prefixed.
	f.cat.Set(newProvider("b", "x"))
	check("b's arrival", map[string][]string{"b": {"b__x"}})

	// Republishing a unchanged calls no one; c's arrival is all the
	// next call holds.
	f.cat.Set(newProvider("a", "x", "y"))
	f.cat.Set(newProvider("c", "z"))
	check("c's arrival", map[string][]string{"c": {"z"}})

	f.cat.Remove("b")
	check("b's removal", map[string][]string{"b": {}})

	// A provider left with no tool is gone to a follower.
	f.cat.Set(newProvider("c"))
	check("c's last tool gone", map[string][]string{"c": {}})
}

// describedProvider is a provider with an About (tool.Describer).
type describedProvider struct {
	*fakeProvider
	about tool.About
}

func (p describedProvider) About() tool.About { return p.about }

// TestFollowToolsAbout: a follower gets each provider's About with its
// tools, and hears of a change of About alone (a plugin reloaded with a
// new description and the same tools).
func TestFollowToolsAbout(t *testing.T) {
	f := newFixture(t, nil)
	clock := tool.About{Title: "Clock", Description: "The time now, in any time zone."}
	f.cat.Set(describedProvider{newProvider("clock", "now"), clock})
	f.cat.Set(newProvider("plain", "x"))
	calls := make(chan []ProviderTools, 10)
	t.Cleanup(f.cat.FollowTools(func(ps []ProviderTools) { calls <- ps }))
	abouts := func(ps []ProviderTools) map[string]tool.About {
		m := map[string]tool.About{}
		for _, p := range ps {
			m[p.Provider] = p.About
		}
		return m
	}

	got := abouts(await(t, calls, "the first call"))
	if diff := cmp.Diff(map[string]tool.About{"clock": clock, "plain": {}}, got); diff != "" {
		t.Errorf("the first call's About (-want +got):\n%s", diff)
	}

	clock.Description = "What time it is, anywhere."
	f.cat.Set(describedProvider{newProvider("clock", "now"), clock})
	ps := await(t, calls, "the new About")
	if diff := cmp.Diff(map[string]tool.About{"clock": clock}, abouts(ps)); diff != "" {
		t.Errorf("after the new About (-want +got):\n%s", diff)
	}
	if len(ps) == 1 && len(ps[0].Tools) != 1 {
		t.Errorf("the new About came with %d tools, want the provider's 1", len(ps[0].Tools))
	}
	if err := f.cat.AwaitFollowers(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func equalNames(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !slices.Equal(v, w) {
			return false
		}
	}
	return true
}

// TestFollowToolsStop: after stop returns, fn is not called again.
func TestFollowToolsStop(t *testing.T) {
	f := newFixture(t, nil)
	called := make(chan struct{}, 10)
	stop := f.cat.FollowTools(func([]ProviderTools) { called <- struct{}{} })
	f.cat.Set(newProvider("a", "x"))
	await(t, called, "a call")
	stop()
	stop() // idempotent
	for len(called) > 0 {
		<-called // the first call and a's may have come as two
	}
	f.cat.Set(newProvider("b", "x"))
	f.cat.Remove("a")
	if n := len(f.cat.followers); n != 0 {
		t.Fatalf("%d followers left after stop", n)
	}
	if len(called) != 0 {
		t.Fatal("fn called after stop")
	}
}

// followedIndex is a search index that follows c, and a channel told
// each time the follower has indexed what it was handed.
func followedIndex(tb testing.TB, c *Catalog) (*toolsearch.Index, <-chan struct{}, func()) {
	x := toolsearch.New()
	landed := make(chan struct{}, 10)
	stop := c.FollowTools(func(ps []ProviderTools) {
		for _, p := range ps {
			if p.Tools == nil {
				x.Remove(p.Provider)
			} else if err := x.Set(p.Provider, toolsearch.Provider{}, p.Tools); err != nil {
				tb.Errorf("index %s: %v", p.Provider, err)
			}
		}
		landed <- struct{}{}
	})
	return x, landed, stop
}

// bigProvider offers 1,000 tools whose descriptions hold word.
func bigProvider(word string) *fakeProvider {
	p := &fakeProvider{name: "big"}
	for i := range 1000 {
		name := fmt.Sprintf("tool_%04d", i)
		p.tools = append(p.tools, tool.Def{Name: name, JSON: json.RawMessage(fmt.Sprintf(
			`{"name":%q,"description":"Looks up the %s number %d of a ledger","inputSchema":{"type":"object","properties":{"account":{"type":"string","description":"the account to read"}}}}`,
			name, word, i))})
	}
	return p
}

// TestFollowToolsIndexFollows: a search index that follows the catalog
// finds what a provider of 1,000 tools offers once it is loaded, changed
// and removed, each as soon as its follower has been called. (How soon
// that is, is BenchmarkFollowToolsIndex's figure: the bound is
// 100ms from publication.)
func TestFollowToolsIndexFollows(t *testing.T) {
	c := New(&Options{Logger: testLogger(&logBuffer{})})
	defer c.Close()
	x, landed, stop := followedIndex(t, c)
	defer stop() // an empty catalog: no first call
	step := func(what string, change func(), found bool) {
		t.Helper()
		change()
		await(t, landed, what)
		hits := x.Search(what, 1)
		if (len(hits) > 0) != found || found && !strings.Contains(string(hits[0].Def), what) {
			t.Fatalf("%s: hits %v", what, hits)
		}
	}
	step("tulips", func() { c.Set(bigProvider("tulips")) }, true)
	step("orchids", func() { c.Set(bigProvider("orchids")) }, true)
	step("removed", func() { c.Remove("big") }, false)
}

// BenchmarkFollowToolsIndex: from publishing a provider of 1,000 tools
// (each op alternates two versions of it) to a following index holding
// them; lag-ms/op is the part after Set returned.
func BenchmarkFollowToolsIndex(b *testing.B) {
	c := New(&Options{Logger: testLogger(&logBuffer{})})
	defer c.Close()
	_, landed, stop := followedIndex(b, c)
	defer stop()
	versions := []*fakeProvider{bigProvider("tulips"), bigProvider("orchids")}
	var lag time.Duration
	i := 0
	for b.Loop() {
		c.Set(versions[i%2])
		published := time.Now()
		<-landed
		lag += time.Since(published)
		i++
	}
	b.ReportMetric(float64(lag.Milliseconds())/float64(i), "lag-ms/op")
}

// TestAwaitFollowers: AwaitFollowers returns once every follower has been
// handed the tools published, not before; a publication that changed no
// tool is nothing to wait for.
func TestAwaitFollowers(t *testing.T) {
	f := newFixture(t, nil)
	gate := make(chan struct{})
	var seen []string // written by fn, read after AwaitFollowers
	stop := f.cat.FollowTools(func(ps []ProviderTools) {
		<-gate
		for _, p := range ps {
			seen = append(seen, p.Provider)
		}
	})
	defer stop()
	f.cat.Set(newProvider("a", "x"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.cat.AwaitFollowers(ctx); err != context.Canceled {
		t.Fatalf("AwaitFollowers with fn held: %v, want context.Canceled", err)
	}
	close(gate)
	if err := f.cat.AwaitFollowers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(seen, "a") {
		t.Fatalf("after AwaitFollowers fn has seen %v, want a", seen)
	}
	f.cat.Set(newProvider("a", "x")) // the same tools: no change
	if err := f.cat.AwaitFollowers(ctx); err != nil {
		t.Fatalf("AwaitFollowers after a Set that changed nothing: %v", err)
	}
}
