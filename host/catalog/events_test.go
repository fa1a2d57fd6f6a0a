package catalog

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/tool"
)

// Which publications make an event, each run on its own catalog that
// already serves provider "a" with tool "x".
func TestWhatIsAChange(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		publish func(c *Catalog)
		events  int
	}{
		"a new provider":     {func(c *Catalog) { c.Set(newProvider("b", "y")) }, 1},
		"a removed provider": {func(c *Catalog) { c.Remove("a") }, 1},
		"a new tool":         {func(c *Catalog) { c.Set(newProvider("a", "x", "y")) }, 1},
		"a changed description": {func(c *Catalog) {
			c.Set(&fakeProvider{name: "a", tools: []tool.Def{{Name: "x", JSON: []byte(`{"name":"x","description":"new","inputSchema":{"type":"object"}}`)}}})
		}, 1},
		"a clash renames a tool": {func(c *Catalog) { c.Set(newProvider("b", "x")) }, 1},
		"the same tools again":   {func(c *Catalog) { c.Set(newProvider("a", "x")) }, 0},
		"the same tools, reformatted": {func(c *Catalog) {
			c.Set(&fakeProvider{name: "a", tools: []tool.Def{{Name: "x", JSON: []byte(`{ "name" : "x", "description": "does x", "inputSchema": { "type": "object" } }`)}}})
		}, 0},
		"removing an absent provider": {func(c *Catalog) { c.Remove("nobody") }, 0},
		"a provider with no tools":    {func(c *Catalog) { c.Set(newProvider("b")) }, 0},
		"a refused provider":          {func(c *Catalog) { c.Set(newProvider("bad name", "y")) }, 0},
		"only a skipped tool":         {func(c *Catalog) { c.Set(newProvider("b", "bad name")) }, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			f.cat.Set(newProvider("a", "x"))
			if n := f.settle(t); n != 1 {
				t.Fatalf("the first Set made %d events, want 1", n)
			}
			tc.publish(f.cat)
			if n := f.settle(t); n != tc.events {
				t.Errorf("got %d events, want %d", n, tc.events)
			}
		})
	}
}

// A clash that comes and goes renames the newcomer only, with one event
// and one log line each time: the name a's clients call stays a's.
func TestClashComesAndGoes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.cat.Set(newProvider("a", "x"))
	f.settle(t)
	f.cat.Set(newProvider("b", "x"))
	if n := f.settle(t); n != 1 {
		t.Errorf("the clash made %d events, want 1", n)
	}
	if diff := cmp.Diff([]string{"b__x", "x"}, allNames(t, f.cat)); diff != "" {
		t.Errorf("names during the clash (-want +got):\n%s", diff)
	}
	if log := f.log.String(); !strings.Contains(log, `tool exposed under another name: provider=b tool=x exposed=b__x reason="name clash between providers"`) ||
		strings.Contains(log, "provider=a") {
		t.Errorf("want one warning, for b:\n%s", log)
	}
	f.cat.Remove("b")
	if n := f.settle(t); n != 1 {
		t.Errorf("the end of the clash made %d events, want 1", n)
	}
	if diff := cmp.Diff([]string{"x"}, allNames(t, f.cat)); diff != "" {
		t.Errorf("names after the clash (-want +got):\n%s", diff)
	}
}

// Renames are logged once, when they happen.
func TestRenameLoggedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.cat.Set(newProvider("a", "files.read"))
	f.cat.Set(newProvider("b", "y"))
	f.cat.Set(newProvider("a", "files.read"))
	if n := strings.Count(f.log.String(), "tool exposed under another name"); n != 1 {
		t.Errorf("the rename was logged %d times, want 1:\n%s", n, f.log)
	}
	if !strings.Contains(f.log.String(), "provider=a tool=files.read exposed=files_read") {
		t.Errorf("the rename warning does not name provider, tool and new name:\n%s", f.log)
	}
}

// N rapid publications, each less than Quiet after the last (and all
// within MaxDelay), make one event Quiet after the last one.
func TestCoalescing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	start := f.cat.ev.bursts.Load()
	for i := range 10 { // 10 × 49ms < MaxDelay
		f.cat.Set(newProvider("p", "t", strings.Repeat("x", i+1)))
		f.clock.Advance(testQuiet - time.Millisecond)
	}
	if got := f.cat.ev.bursts.Load() - start; got != 0 {
		t.Fatalf("%d events during the burst, want 0", got)
	}
	if len(f.events) != 0 {
		t.Fatal("a subscriber was called during the burst")
	}
	f.clock.Advance(time.Millisecond)
	if got := f.cat.ev.bursts.Load() - start; got != 1 {
		t.Fatalf("%d events Quiet after the burst, want 1", got)
	}
	await(t, f.events, "the event")
	if n := f.clock.Pending(); n != 0 {
		t.Errorf("%d timers still pending", n)
	}
}

// A burst that never goes quiet still makes an event every MaxDelay.
func TestMaxDelay(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	start := f.cat.ev.bursts.Load()
	step := testQuiet / 2
	var at []time.Duration // when each event fired, since the first change
	for i := range 50 {    // 50 × 25ms = 1.25s of continuous changes
		f.cat.Set(newProvider("p", strings.Repeat("x", i+1)))
		before := f.cat.ev.bursts.Load()
		f.clock.Advance(step)
		if f.cat.ev.bursts.Load() != before {
			at = append(at, time.Duration(i+1)*step)
			await(t, f.events, "an event")
		}
	}
	if diff := cmp.Diff([]time.Duration{testMaxDelay, 2 * testMaxDelay}, at); diff != "" {
		t.Errorf("event times (-want +got):\n%s", diff)
	}
	f.clock.Advance(testQuiet)
	if got := f.cat.ev.bursts.Load() - start; got != 3 {
		t.Errorf("%d events in all, want 3 (two forced, one when quiet)", got)
	}
}

// The real clock delivers too.
func TestRealClock(t *testing.T) {
	t.Parallel()
	c := New(&Options{Quiet: time.Millisecond, MaxDelay: time.Millisecond, Logger: testLogger(&logBuffer{})})
	defer c.Close()
	events := make(chan struct{}, 10)
	c.Subscribe(func(tool.Change) { events <- struct{}{} })
	c.Set(newProvider("p", "x"))
	await(t, events, "the event")
	c.Remove("p")
	await(t, events, "the second event")
}

func TestSubscribers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	var mu sync.Mutex
	var order []string
	done := make(chan struct{}, 10)
	record := func(name string) func(tool.Change) {
		return func(tool.Change) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			if name == "third" {
				done <- struct{}{}
			}
		}
	}
	f.cat.Subscribe(record("first"))
	cancel := f.cat.Subscribe(record("second"))
	f.cat.Subscribe(record("third"))

	f.cat.Set(newProvider("p", "x"))
	f.settle(t)
	await(t, done, "the third subscriber")
	cancel()
	cancel() // idempotent
	f.cat.Remove("p")
	f.settle(t)
	await(t, done, "the third subscriber again")

	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"first", "second", "third", "first", "third"}, order); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// A subscriber that blocks holds up later events, not Set or Remove; its
// pending events coalesce into one.
func TestSlowSubscriber(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	entered := make(chan struct{}, 10)
	release := make(chan struct{})
	f.cat.Subscribe(func(tool.Change) {
		entered <- struct{}{}
		<-release
	})
	f.cat.Set(newProvider("p", "x"))
	f.settle(t)
	await(t, entered, "the slow subscriber")

	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := range 5 {
			f.cat.Set(newProvider("q", strings.Repeat("y", i+1)))
			f.clock.Advance(testMaxDelay) // each its own burst
		}
		f.cat.Remove("q")
		f.clock.Advance(testMaxDelay)
	}()
	await(t, published, "Set and Remove while a subscriber blocks")

	close(release)
	// The fixture's own subscriber (first) saw the first event; the six
	// bursts since then wait as one delivery.
	await(t, entered, "the delivery of the waiting bursts")
	f.cat.Close() // waits for the dispatcher to exit
	if n := len(entered); n != 0 {
		t.Errorf("%d more deliveries, want the waiting bursts coalesced into one", n)
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	called := make(chan struct{}, 10)
	f.cat.Subscribe(func(tool.Change) { called <- struct{}{} })
	f.cat.Set(newProvider("p", "x"))
	if f.clock.Pending() != 1 {
		t.Fatalf("%d timers pending, want 1", f.clock.Pending())
	}
	f.cat.Close()
	if n := f.clock.Pending(); n != 0 {
		t.Errorf("Close left %d timers pending", n)
	}
	f.clock.Advance(testMaxDelay)
	f.cat.Set(newProvider("q", "y"))
	f.clock.Advance(testMaxDelay)
	if n := f.cat.ev.bursts.Load(); n != 0 {
		t.Errorf("%d events after Close", n)
	}
	// The dispatcher has exited (Close waits for it), so nothing can
	// arrive later.
	if len(called) != 0 || len(f.events) != 0 {
		t.Error("a subscriber was called after Close")
	}
	// Listing and calling still work; Close is idempotent.
	if diff := cmp.Diff([]string{"x", "y"}, allNames(t, f.cat)); diff != "" {
		t.Errorf("names after Close (-want +got):\n%s", diff)
	}
	f.cat.Close()
}

// Close waits for a callback in progress.
func TestCloseWaitsForCallback(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	entered := make(chan struct{})
	release := make(chan struct{})
	var finished bool
	f.cat.Subscribe(func(tool.Change) {
		close(entered)
		<-release
		finished = true
	})
	f.cat.Set(newProvider("p", "x"))
	f.settle(t)
	await(t, entered, "the callback")
	closed := make(chan struct{})
	go func() {
		f.cat.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a callback was running")
	default:
	}
	close(release)
	await(t, closed, "Close")
	if !finished {
		t.Error("Close returned before the callback finished")
	}
}

// While held, bursts do not end, however long they last; the last release
// ends them at once, as one event. Holds nest.
func TestHold(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	start := f.cat.ev.bursts.Load()
	outer := f.cat.Hold()
	inner := f.cat.Hold()
	f.cat.Set(newProvider("p", "x"))
	f.clock.Advance(3 * testMaxDelay)
	f.cat.Set(newProvider("q", "y"))
	f.clock.Advance(3 * testMaxDelay)
	inner()
	if got := f.cat.ev.bursts.Load() - start; got != 0 {
		t.Fatalf("%d events while held, want 0", got)
	}
	outer()
	outer() // idempotent
	if got := f.cat.ev.bursts.Load() - start; got != 1 {
		t.Fatalf("%d events after the last release, want 1", got)
	}
	await(t, f.events, "the event")
	if n := f.clock.Pending(); n != 0 {
		t.Errorf("%d timers still pending", n)
	}
	// Without changes, a hold makes no event.
	f.cat.Hold()()
	if got := f.cat.ev.bursts.Load() - start; got != 1 {
		t.Errorf("%d events after an empty hold, want still 1", got)
	}
}

// A hold whose release never comes ends after MaxHold.
func TestHoldTimesOut(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	start := f.cat.ev.bursts.Load()
	release := f.cat.Hold()
	f.cat.Set(newProvider("p", "x"))
	f.clock.Advance(DefaultMaxHold - time.Millisecond)
	if got := f.cat.ev.bursts.Load() - start; got != 0 {
		t.Fatalf("%d events before MaxHold, want 0", got)
	}
	f.clock.Advance(time.Millisecond)
	await(t, f.events, "the event at MaxHold")
	release()
	f.cat.Set(newProvider("q", "y"))
	if n := f.settle(t); n != 1 {
		t.Errorf("after the timed-out hold, a change made %d events, want 1", n)
	}
}

// One event per burst says which lists the burst changed, each run on its
// own catalog that already serves tool provider "a" and server "s" with a
// resource, a template and a prompt.
func TestChangeKinds(t *testing.T) {
	t.Parallel()
	s := func() *fakeServer { return newServer("s").with("file:///r", "file:///{p}", "greet:who!") }
	tests := map[string]struct {
		publish func(c *Catalog)
		want    tool.Change
	}{
		"a new tool":     {func(c *Catalog) { c.Set(newProvider("b", "y")) }, tool.Change{Tools: true}},
		"a new resource": {func(c *Catalog) { c.Set(s().with("file:///r2")) }, tool.Change{Resources: true}},
		"a new template": {func(c *Catalog) { c.Set(s().with("docs://{id}")) }, tool.Change{Resources: true}},
		"a new prompt":   {func(c *Catalog) { c.Set(s().with("bye")) }, tool.Change{Prompts: true}},
		"a tool on the server": {
			func(c *Catalog) { srv := s(); srv.tools = []tool.Def{toolDef("t", objectSchema)}; c.Set(srv) },
			tool.Change{Tools: true},
		},
		"tools and prompts in one burst": {
			func(c *Catalog) { c.Set(newProvider("b", "y")); c.Set(s().with("bye")) },
			tool.Change{Tools: true, Prompts: true},
		},
		"everything in one burst": {
			func(c *Catalog) { c.Remove("s"); c.Remove("a") },
			tool.Change{Tools: true, Resources: true, Prompts: true},
		},
		"the server removed": {func(c *Catalog) { c.Remove("s") }, tool.Change{Resources: true, Prompts: true}},
		"a prompt clash renames the prompt": {
			func(c *Catalog) { c.Set(newServer("t").with("greet")) }, tool.Change{Prompts: true},
		},
		"a changed resource description": {
			func(c *Catalog) {
				srv := s()
				srv.resources[0].JSON = json.RawMessage(`{"uri":"file:///r","name":"r","description":"new"}`)
				c.Set(srv)
			},
			tool.Change{Resources: true},
		},
		"resources no longer offered": {
			func(c *Catalog) { srv := s(); srv.offers.Resources = false; c.Set(srv) }, tool.Change{Resources: true},
		},
		"prompts no longer offered": {
			func(c *Catalog) { srv := s(); srv.offers.Prompts = false; c.Set(srv) }, tool.Change{Prompts: true},
		},
		"the same server again, a new instance": {func(c *Catalog) { c.Set(s()) }, tool.Change{}},
		"the same definitions, reformatted": {
			func(c *Catalog) {
				srv := s()
				srv.resources[0].JSON = json.RawMessage(`{ "uri": "file:///r", "name": "r", "description": "about file:///r" }`)
				srv.prompts[0].JSON = json.RawMessage("{\"name\": \"greet\",\n \"description\": \"does greet\", \"arguments\": [ {\"name\": \"who\", \"required\": true} ]}")
				c.Set(srv)
			},
			tool.Change{},
		},
		"a resource hidden by a clash": {
			// "z" sorts after "s": its resource of the same URI is
			// hidden, and the list stays the same.
			func(c *Catalog) { c.Set(newServer("z").with("file:///r")) }, tool.Change{},
		},
		"only a skipped definition": {
			func(c *Catalog) { c.Set(newServer("z").with("relative/uri://x")) }, tool.Change{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			f.cat.Set(newProvider("a", "x"))
			f.cat.Set(s())
			if got := f.change(t); got != (tool.Change{Tools: true, Resources: true, Prompts: true}) {
				t.Fatalf("the first burst said %+v, want every list", got)
			}
			tc.publish(f.cat)
			if got := f.change(t); got != tc.want {
				t.Errorf("event %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Bursts that end while the dispatcher is busy are delivered as one call
// that says everything they changed.
func TestChangeKindsMerge(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	entered := make(chan tool.Change, 10)
	release := make(chan struct{})
	f.cat.Subscribe(func(ch tool.Change) {
		entered <- ch
		<-release
	})
	f.cat.Set(newProvider("p", "x"))
	f.settle(t)
	if got := await(t, entered, "the slow subscriber"); got != (tool.Change{Tools: true}) {
		t.Errorf("first event %+v", got)
	}
	f.cat.Set(newServer("s").with("greet"))
	f.clock.Advance(testMaxDelay)
	f.cat.Set(newServer("r").with("file:///r"))
	f.clock.Advance(testMaxDelay)
	close(release)
	want := tool.Change{Resources: true, Prompts: true}
	if got := await(t, entered, "the merged delivery"); got != want {
		t.Errorf("merged event %+v, want %+v", got, want)
	}
	if got := await(t, f.events, "the fixture's merged event"); got != want {
		t.Errorf("the fixture's subscriber got %+v, want %+v", got, want)
	}
}
