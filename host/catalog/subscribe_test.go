package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plughost/plughost/host/tool"
)

// subscribe subscribes to uri and fails the test on an error.
func subscribe(t *testing.T, c *Catalog, uri string) func() {
	t.Helper()
	release, err := c.SubscribeResource(context.Background(), uri)
	if err != nil {
		t.Fatalf("SubscribeResource(%q): %v", uri, err)
	}
	return release
}

// subsOf waits for the catalog's background calls and returns what s was
// told since the last look.
func subsOf(c *Catalog, s *fakeServer, seen *int) []string {
	c.subs.background.Wait()
	all := s.record(&s.subs)
	out := all[*seen:]
	*seen = len(all)
	return out
}

// Interest is counted per URI: the provider hears the first subscribe and
// the last release, once each; release is idempotent.
func TestSubscribeRefCount(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	p := newServer("p").with("file:///a", "file:///{name}")
	f.cat.Set(p)
	seen := 0
	step := func(what string, want ...string) {
		t.Helper()
		if diff := cmp.Diff(want, subsOf(f.cat, p, &seen), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: the provider was told (-want +got):\n%s", what, diff)
		}
	}
	r1 := subscribe(t, f.cat, "file:///a")
	r2 := subscribe(t, f.cat, "file:///a")
	r3 := subscribe(t, f.cat, "file:///t") // a URI a template matches
	step("three subscriptions", "+file:///a", "+file:///t")
	r1()
	r1()
	step("one of two released, twice")
	r2()
	step("the last released", "-file:///a")
	r2()
	r4 := subscribe(t, f.cat, "file:///a")
	step("subscribed again", "+file:///a")
	r3()
	step("the template's released", "-file:///t")
	r4()
	step("all released", "-file:///a")
	f.cat.subs.mu.Lock()
	left := len(f.cat.subs.byURI)
	f.cat.subs.mu.Unlock()
	if left != 0 {
		t.Errorf("%d interests kept after every release", left)
	}
}

func TestSubscribeErrors(t *testing.T) {
	t.Parallel()
	errNo := errors.New("no watcher left")
	refused := tool.Errorf(tool.ErrRefused, "plugin p refuses")
	tests := map[string]struct {
		uri   string
		err   error // what the provider answers
		check func(t *testing.T, err error)
	}{
		"unknown": {uri: "file:///elsewhere", check: func(t *testing.T, err error) {
			if !errors.Is(err, tool.ErrUnknownResource) || !strings.Contains(err.Error(), `"file:///elsewhere"`) {
				t.Errorf("error %v, want ErrUnknownResource naming the URI", err)
			}
		}},
		"untyped": {uri: "file:///a", err: errNo, check: func(t *testing.T, err error) {
			if !errors.Is(err, errNo) || err.Error() != `subscribing to resource "file:///a" of provider "p": no watcher left` {
				t.Errorf("error %v, want errNo naming resource and provider", err)
			}
		}},
		"typed": {uri: "file:///a", err: refused, check: func(t *testing.T, err error) {
			if err != refused {
				t.Errorf("error %v, want the provider's as it is", err)
			}
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			p := newServer("p").with("file:///a")
			fail := true
			p.subscribe = func(context.Context, string, bool) error {
				if fail {
					return tc.err
				}
				return nil
			}
			f.cat.Set(p)
			release, err := f.cat.SubscribeResource(context.Background(), tc.uri)
			if err == nil || release != nil {
				t.Fatalf("SubscribeResource succeeded")
			}
			tc.check(t, err)
			// A failed subscription is not counted: the next one asks
			// the provider again, and its release tells it.
			fail = false
			if tc.err != nil {
				release := subscribe(t, f.cat, tc.uri)
				release()
				seen := 0
				if diff := cmp.Diff([]string{"+" + tc.uri, "+" + tc.uri, "-" + tc.uri}, subsOf(f.cat, p, &seen)); diff != "" {
					t.Errorf("the provider was told (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// A provider that does not offer subscriptions is never called, and
// subscribing to its resources succeeds.
func TestSubscribeNotOffered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	p := newServer("p").with("file:///a")
	p.offers.Subscriptions = false
	f.cat.Set(p)
	release := subscribe(t, f.cat, "file:///a")
	release()
	seen := 0
	if got := subsOf(f.cat, p, &seen); len(got) != 0 {
		t.Errorf("the provider was told %v", got)
	}
}

// At most Options.MaxSubscriptions distinct URIs at once.
func TestSubscribeLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{MaxSubscriptions: 2})
	f.cat.Set(newServer("p").with("file:///{name}"))
	ra := subscribe(t, f.cat, "file:///a")
	subscribe(t, f.cat, "file:///b")
	ra2 := subscribe(t, f.cat, "file:///a") // the same URI again
	_, err := f.cat.SubscribeResource(context.Background(), "file:///c")
	if !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), `"file:///c"`) || !strings.Contains(err.Error(), "2 resources are subscribed") {
		t.Fatalf("error %v, want ErrRefused naming the URI and the limit", err)
	}
	ra()
	ra2()
	f.cat.subs.background.Wait()
	subscribe(t, f.cat, "file:///c")
}

// The default limit is the whole server's: well above one session's
// (host/mcp's default, 1000), so that a hundred sessions each at its own
// limit fit; the old default, 10000, was full with ten.
func TestSubscribeLimitDefault(t *testing.T) {
	t.Parallel()
	const perSession = 1000 // host/mcp Options.MaxSubscriptions' default
	if DefaultMaxSubscriptions < 100*perSession {
		t.Errorf("DefaultMaxSubscriptions = %d, want at least 100 sessions' worth (%d)", DefaultMaxSubscriptions, 100*perSession)
	}
	f := newFixture(t, nil)
	f.cat.Set(newServer("p").with("file:///{session}/{n}"))
	for session := range 11 {
		for n := range perSession {
			subscribe(t, f.cat, fmt.Sprintf("file:///%d/%d", session, n))
		}
	}
	f.cat.subs.mu.Lock()
	defer f.cat.subs.mu.Unlock()
	if got := len(f.cat.subs.byURI); got != 11*perSession {
		t.Errorf("%d URIs subscribed, want %d", got, 11*perSession)
	}
}

// When the provider that serves a URI changes, the URIs with interest
// follow it: a new instance is subscribed (the old one, gone, is not
// called), a removed provider is not called, one that comes back is
// subscribed, and a provider that loses the URI to one that sorts first
// is unsubscribed.
func TestResubscribe(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	p1 := newServer("p").with("file:///a", "file:///b")
	p2 := newServer("p").with("file:///a", "file:///b")
	p3 := newServer("p").with("file:///a", "file:///b")
	first := newServer("a-first").with("file:///a")
	seen := map[*fakeServer]*int{p1: new(int), p2: new(int), p3: new(int), first: new(int)}
	step := func(what string, want map[*fakeServer][]string) {
		t.Helper()
		for s, n := range seen {
			if diff := cmp.Diff(want[s], subsOf(f.cat, s, n), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: %p was told (-want +got):\n%s", what, s, diff)
			}
		}
	}
	f.cat.Set(p1)
	release := subscribe(t, f.cat, "file:///a")
	releaseB := subscribe(t, f.cat, "file:///b")
	releaseB()
	step("subscribed", map[*fakeServer][]string{p1: {"+file:///a", "+file:///b", "-file:///b"}})
	f.cat.Set(p2)
	step("replaced by a new instance", map[*fakeServer][]string{p2: {"+file:///a"}})
	f.cat.Set(p2)
	step("the same instance again", nil)
	f.cat.Remove("p")
	step("removed", nil)
	f.cat.Set(p3)
	step("back", map[*fakeServer][]string{p3: {"+file:///a"}})
	f.cat.Set(first)
	step("a provider that sorts first", map[*fakeServer][]string{p3: {"-file:///a"}, first: {"+file:///a"}})
	f.cat.Remove("a-first")
	step("it goes", map[*fakeServer][]string{p3: {"+file:///a"}})
	f.cat.Remove("p")
	release()
	step("released after the provider went", nil)
	f.cat.Set(p3)
	step("no interest left", nil)
}

// A provider republished as a new value of the same running instance
// (tool.Instance), as the plugin manager does whenever a list changes,
// keeps what it was told: nothing new about the URIs it still serves; an
// unsubscribe for one it no longer serves (withdrawn, or now another
// provider's, which is subscribed). A new instance under the same name is
// subscribed; the old one is not called again.
func TestResubscribeSameInstance(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	p := newServer("p")
	first := newServer("a-first").with("file:///c")
	restarted := newServer("p")
	seen := map[*fakeServer]*int{p: new(int), first: new(int), restarted: new(int)}
	step := func(what string, want map[*fakeServer][]string) {
		t.Helper()
		for s, n := range seen {
			if diff := cmp.Diff(want[s], subsOf(f.cat, s, n), cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("%s: %s %p was told (-want +got):\n%s", what, s.name, s, diff)
			}
		}
	}
	all := []string{"file:///a", "file:///b", "file:///c", "file:///d", "tmpl://{x}"}
	f.cat.Set(p.publish(all...))
	releaseA := subscribe(t, f.cat, "file:///a")
	releaseB := subscribe(t, f.cat, "file:///b")
	subscribe(t, f.cat, "file:///c")
	subscribe(t, f.cat, "file:///d")
	subscribe(t, f.cat, "tmpl://1")
	step("subscribed", map[*fakeServer][]string{p: {"+file:///a", "+file:///b", "+file:///c", "+file:///d", "+tmpl://1"}})
	for range 3 {
		f.cat.Set(p.publish(all...))
	}
	step("republished three times", nil)
	f.cat.Set(p.publish("file:///a", "file:///c", "file:///d", "tmpl://{x}"))
	step("a subscribed resource withdrawn", map[*fakeServer][]string{p: {"-file:///b"}})
	f.cat.Set(first)
	step("a provider that sorts first takes a URI", map[*fakeServer][]string{p: {"-file:///c"}, first: {"+file:///c"}})
	f.cat.Set(p.publish("file:///a", "file:///c", "file:///d"))
	step("the template withdrawn", map[*fakeServer][]string{p: {"-tmpl://1"}})
	releaseA()
	step("released", map[*fakeServer][]string{p: {"-file:///a"}})
	f.cat.Set(restarted.publish("file:///b", "file:///d"))
	step("a new instance", map[*fakeServer][]string{restarted: {"+file:///b", "+file:///d"}})
	releaseB()
	step("released with the new instance", map[*fakeServer][]string{restarted: {"-file:///b"}})
}

// A re-subscription the new provider refuses is logged and tried again at
// the next change of providers.
func TestResubscribeRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.cat.Set(newServer("p").with("file:///a"))
	subscribe(t, f.cat, "file:///a")
	p2 := newServer("p").with("file:///a")
	fail := true
	p2.subscribe = func(context.Context, string, bool) error {
		if fail {
			return errors.New("not yet")
		}
		return nil
	}
	f.cat.Set(p2)
	f.cat.subs.background.Wait()
	if log := f.log.String(); !strings.Contains(log, "could not subscribe to a resource") || !strings.Contains(log, "not yet") {
		t.Errorf("no warning:\n%s", log)
	}
	fail = false
	f.cat.Set(newProvider("other", "x"))
	seen := 0
	if diff := cmp.Diff([]string{"+file:///a", "+file:///a"}, subsOf(f.cat, p2, &seen)); diff != "" {
		t.Errorf("p2 was told (-want +got):\n%s", diff)
	}
}

// Listeners hear an update when the reporting provider serves the URI and
// someone is subscribed to it.
func TestResourceUpdated(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.cat.Set(newServer("p").with("file:///a", "file:///{name}"))
	f.cat.Set(newServer("q").with("file:///a", "file:///{name}")) // hidden, and second for the template
	var mu sync.Mutex
	var heard []string
	listen := func(who string) func() {
		return f.cat.OnResourceUpdated(func(uri string) {
			mu.Lock()
			heard = append(heard, who+" "+uri)
			mu.Unlock()
		})
	}
	cancel1 := listen("one")
	listen("two")
	f.cat.ResourceUpdated("p", "file:///a") // no one subscribed
	release := subscribe(t, f.cat, "file:///a")
	subscribe(t, f.cat, "file:///t")
	f.cat.ResourceUpdated("p", "file:///a")
	f.cat.ResourceUpdated("q", "file:///a")     // q does not serve it
	f.cat.ResourceUpdated("q", "file:///t")     // nor this one: p's template comes first
	f.cat.ResourceUpdated("p", "file:///t")     // p's template serves it
	f.cat.ResourceUpdated("p", "file:///other") // no one subscribed
	f.cat.ResourceUpdated("nobody", "file:///a")
	cancel1()
	cancel1()
	f.cat.ResourceUpdated("p", "file:///a")
	release()
	f.cat.ResourceUpdated("p", "file:///a")
	want := []string{"one file:///a", "two file:///a", "one file:///t", "two file:///t", "two file:///a"}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, heard); diff != "" {
		t.Errorf("heard (-want +got):\n%s", diff)
	}
}

// A provider that takes its time to subscribe holds up only the
// subscriptions of that URI: listing, reading, publishing and other
// subscriptions go on, and a second subscriber of the URI waits for the
// first call's outcome, or for its own ctx.
func TestSubscribeHoldsNoLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	entered := make(chan struct{})
	proceed := make(chan struct{})
	p := newServer("p").with("file:///slow", "file:///fast")
	p.subscribe = func(_ context.Context, uri string, on bool) error {
		if uri == "file:///slow" && on {
			close(entered)
			<-proceed
		}
		return nil
	}
	f.cat.Set(p)
	done := make(chan error, 1)
	go func() {
		_, err := f.cat.SubscribeResource(context.Background(), "file:///slow")
		done <- err
	}()
	await(t, entered, "the slow subscribe")

	others := make(chan struct{})
	go func() {
		defer close(others)
		if got := listKeys(t, "uri", f.cat.ListResources); len(got) != 2 {
			t.Errorf("resources while a subscribe runs: %v", got)
		}
		readBy(t, f.cat, "file:///slow", "p")
		f.cat.Set(newServer("q").with("file:///q"))
		release := subscribe(t, f.cat, "file:///fast")
		release()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := f.cat.SubscribeResource(ctx, "file:///slow"); !errors.Is(err, context.Canceled) {
			t.Errorf("a second subscriber with a cancelled ctx: %v, want context.Canceled", err)
		}
	}()
	await(t, others, "listing, reading, publishing and subscribing while a subscribe runs")
	close(proceed)
	if err := await(t, done, "the slow subscribe to finish"); err != nil {
		t.Fatal(err)
	}
	seen := 0
	if diff := cmp.Diff([]string{"+file:///slow", "+file:///fast", "-file:///fast"}, subsOf(f.cat, p, &seen)); diff != "" {
		t.Errorf("the provider was told (-want +got):\n%s", diff)
	}
}

// Many callers subscribing and releasing one URI at once (run with
// -race): the provider hears strictly alternating subscribes and
// unsubscribes, and nothing once every release is done.
func TestSubscribeConcurrent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	p := newServer("p").with("file:///{name}")
	f.cat.Set(p)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 40 {
				uri := fmt.Sprintf("file:///%d", j%3)
				release, err := f.cat.SubscribeResource(context.Background(), uri)
				if err != nil {
					t.Error(err)
					return
				}
				if (i+j)%2 == 0 {
					f.cat.ResourceUpdated("p", uri)
				}
				release()
			}
		})
	}
	wg.Wait()
	f.cat.subs.background.Wait()
	state := map[string]bool{}
	for _, s := range p.record(&p.subs) {
		uri, on := s[1:], s[0] == '+'
		if state[uri] == on {
			t.Fatalf("the provider was told %q twice in a row: %v", s, p.record(&p.subs))
		}
		state[uri] = on
	}
	for uri, on := range state {
		if on {
			t.Errorf("%s still subscribed after every release", uri)
		}
	}
	if n := len(f.cat.subs.byURI); n != 0 {
		t.Errorf("%d interests kept", n)
	}
}

// Subscribing while providers come and go (run with -race): once every
// release is done, no instance is left subscribed.
func TestSubscribeChurn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	var mu sync.Mutex
	var servers []*fakeServer
	publish := func() {
		s := newServer("p").with("file:///{name}")
		mu.Lock()
		servers = append(servers, s)
		mu.Unlock()
		f.cat.Set(s)
	}
	publish()
	var wg sync.WaitGroup
	wg.Go(func() {
		for j := range 30 {
			if j%3 == 0 {
				f.cat.Remove("p")
			}
			publish()
		}
	})
	for range 4 {
		wg.Go(func() {
			for j := range 30 {
				release, err := f.cat.SubscribeResource(context.Background(), fmt.Sprintf("file:///%d", j%2))
				if err == nil {
					release()
				} else if !errors.Is(err, tool.ErrUnknownResource) {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	f.cat.subs.background.Wait()
	last := servers[len(servers)-1]
	state := map[string]bool{}
	for _, s := range last.record(&last.subs) {
		state[s[1:]] = s[0] == '+'
	}
	for uri, on := range state {
		if on {
			t.Errorf("%s still subscribed with the published provider", uri)
		}
	}
	f.cat.subs.mu.Lock()
	defer f.cat.subs.mu.Unlock()
	if n := len(f.cat.subs.byURI); n != 0 {
		t.Errorf("%d interests kept", n)
	}
}
