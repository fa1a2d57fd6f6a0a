package catalog

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plughost/plughost/host/tool"
)

// Resource subscriptions: the catalog counts the interest in each URI
// across its callers (the protocol layer's sessions) and tells the
// provider that serves the URI when the first interest arrives and when
// the last is released, so a provider hears one subscribe per resource,
// not one per client.
//
// Each URI's calls to providers are made in turn (a URI's subscribe waits
// for its unsubscribe, and the reverse), by whoever needs the state to
// change: the caller of SubscribeResource (which then knows the provider
// agreed), or a goroutine of the catalog's after a release or a change of
// the providers. Each one compares what is with what should be: the
// provider told (if any) against the provider that serves the URI now,
// when someone is interested and it offers subscriptions, as instances
// (sameInstance), so a republication of the instance told is told
// nothing. No catalog lock is held while a provider is called.

// unsubscribeTimeout bounds the calls to providers that no caller waits
// for: unsubscribing after the last release, and (re-)subscribing with a
// URI's new provider.
const unsubscribeTimeout = 10 * time.Second

// subscriptions is the interest in each resource URI, and the listeners
// of updates.
type subscriptions struct {
	max int

	mu    sync.Mutex
	byURI map[string]*interest

	background sync.WaitGroup // goroutines reconciling; tests wait for them

	listenMu  sync.Mutex
	listeners []*listener // copied on change, never modified in place
}

// interest is the callers' interest in one URI and what its provider was
// told. An interest lives while it is counted, busy or told.
type interest struct {
	uri   string
	count int           // callers interested (mu)
	busy  int           // goroutines about to use op or using it (mu)
	stale bool          // the providers changed while busy: compare again (mu)
	told  *provider     // the provider subscribed now, nil for none (mu; written with op held)
	op    chan struct{} // capacity 1: held while calling a provider about uri
}

type listener struct {
	fn        func(uri string)
	cancelled atomic.Bool
}

func (s *subscriptions) init(max int) {
	s.max = max
	s.byURI = map[string]*interest{}
}

// SubscribeResource registers one caller's interest in updates of the
// resource at uri; release ends it. uri must be served by a provider (as
// for ReadResource: a listed resource, or a URI a template matches).
//
// Interest is counted per URI across all callers: the provider that
// serves uri is told (its SubscribeResource(ctx, uri, true)) on the first
// interest, and (…, false) after the last release. SubscribeResource
// returns once the provider has agreed: it waits for a call about uri
// already under way, and for the provider, until ctx ends. A provider
// that does not offer subscriptions (tool.Offers.Subscriptions) is not
// called and the subscription still succeeds: MCP's subscribe capability
// is the server's, a client may subscribe to anything listed, and such a
// resource simply never reports an update.
//
// release is idempotent and never blocks: the provider is told on a
// goroutine of the catalog's, within 10 seconds. A provider republished
// as the same instance (tool.Instance; see sameInstance) is not told again
// about the URIs it still serves, and is unsubscribed from those it no
// longer serves. When the provider that serves uri changes (it is replaced
// by a new instance, a provider that sorts first now owns the URI, or it
// comes back after Remove), the URIs that still have interest are
// subscribed with the new one; a removed provider is not called, and its
// subscriptions stay on the callers' side (their releases still work).
// Should that re-subscribing fail, a warning is logged and it is tried
// again at the next Set or Remove.
//
// Errors: no provider serves uri → one wrapping tool.ErrUnknownResource;
// more than Options.MaxSubscriptions distinct URIs subscribed at once →
// one wrapping tool.ErrRefused naming the limit; the provider's refusal →
// its error, as it is when tool.Typed reports it, else wrapped naming
// resource and provider; ctx's error while waiting.
func (c *Catalog) SubscribeResource(ctx context.Context, uri string) (release func(), err error) {
	if c.owner(c.snap.Load(), uri) == nil {
		return nil, fmt.Errorf("%w: %q", tool.ErrUnknownResource, uri)
	}
	e, err := c.subs.enter(uri)
	if err != nil {
		return nil, err
	}
	err = c.reconcile(ctx, e)
	c.subs.mu.Lock()
	e.busy--
	if err != nil {
		e.count--
	}
	c.settle(e)
	c.subs.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			c.subs.mu.Lock()
			e.count--
			c.settle(e)
			c.subs.mu.Unlock()
		})
	}, nil
}

// enter counts one more interest in uri, and marks it busy.
func (s *subscriptions) enter(uri string) (*interest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byURI[uri]
	if e == nil {
		if len(s.byURI) >= s.max {
			return nil, tool.Errorf(tool.ErrRefused, "cannot subscribe to resource %q: %d resources are subscribed, the most this server allows at once", uri, s.max)
		}
		e = &interest{uri: uri, op: make(chan struct{}, 1)}
		s.byURI[uri] = e
	}
	e.count++
	e.busy++
	return e, nil
}

// settle makes sure e moves on after a change of its count or business:
// no one interested but a provider told → unsubscribe on a goroutine;
// nothing left → forget e. c.subs.mu must be held.
func (c *Catalog) settle(e *interest) {
	switch {
	case e.busy > 0:
		// Whoever is busy settles e again when done.
	case e.stale || e.count == 0 && e.told != nil:
		e.stale = false
		c.background(e)
	case e.count == 0 && c.subs.byURI[e.uri] == e:
		delete(c.subs.byURI, e.uri)
	}
}

// background reconciles e on a goroutine. c.subs.mu must be held.
func (c *Catalog) background(e *interest) {
	e.busy++
	c.subs.background.Add(1)
	go func() {
		defer c.subs.background.Done()
		ctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
		err := c.reconcile(ctx, e)
		cancel()
		if err != nil {
			c.log.Warn("could not subscribe to a resource with its provider; trying again at the next change of providers", "uri", e.uri, "error", err)
		}
		c.subs.mu.Lock()
		e.busy--
		c.settle(e)
		c.subs.mu.Unlock()
	}()
}

// reconcile calls providers until the provider told about e.uri is the
// one that should be: the provider serving the URI now, when someone is
// interested and it offers subscriptions; otherwise none. It returns the
// error of a subscribe the provider refused. e must be busy.
func (c *Catalog) reconcile(ctx context.Context, e *interest) error {
	select {
	case e.op <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("subscribing to resource %q: %w", e.uri, ctx.Err())
	}
	defer func() { <-e.op }()
	for {
		s := c.snap.Load()
		c.subs.mu.Lock()
		interested, told := e.count > 0, e.told
		c.subs.mu.Unlock()
		var want *provider
		if interested {
			if p := c.owner(s, e.uri); p != nil && p.offers.Subscriptions {
				want = p
			}
		}
		switch {
		case sameInstance(told, want):
			c.setTold(e, want) // the newest publication of the same instance
			return nil
		case told != nil:
			// The newest publication of the instance told, if it is
			// still published: the same running instance, which still
			// holds the subscription.
			if cur := s.providers[told.name]; sameInstance(cur, told) && cur.srv != nil {
				if err := cur.srv.SubscribeResource(ctx, e.uri, false); err != nil {
					c.log.Warn("a provider failed to unsubscribe from a resource", "provider", told.name, "uri", e.uri, "error", err)
				}
			}
			c.setTold(e, nil)
		default:
			if err := want.srv.SubscribeResource(ctx, e.uri, true); err != nil {
				if tool.Typed(err) {
					return err
				}
				return fmt.Errorf("subscribing to resource %q of provider %q: %w", e.uri, want.name, err)
			}
			c.setTold(e, want)
		}
	}
}

func (c *Catalog) setTold(e *interest, p *provider) {
	c.subs.mu.Lock()
	e.told = p
	c.subs.mu.Unlock()
}

// sameInstance reports whether a and b are publications of one running
// instance: both tool.Instance with equal, non-nil Instance() values (as
// read at Set), else the same provider value (== on tool.Provider, when
// both values are comparable). A provider is published again whenever one
// of its lists changes; what its instance was told (its subscriptions)
// stays told.
func sameInstance(a, b *provider) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a == b {
		return true
	}
	if a.name != b.name {
		return false
	}
	if a.instance != nil && b.instance != nil {
		return canCompare(a.instance) && canCompare(b.instance) && a.instance == b.instance
	}
	return canCompare(a.p) && canCompare(b.p) && a.p == b.p
}

// canCompare reports whether == on v cannot panic.
func canCompare(v any) bool {
	return reflect.ValueOf(v).Comparable()
}

// resync starts reconciling every interest whose provider is not the one
// that should be told in s. Called by rebuild, c.mu held.
func (c *Catalog) resync(s *snapshot) {
	type check struct {
		e          *interest
		interested bool
		told       *provider
	}
	c.subs.mu.Lock()
	var checks []check
	for _, e := range c.subs.byURI {
		switch {
		case e.busy > 0:
			// It may have compared with an older snapshot already.
			e.stale = true
		case e.count > 0 || e.told != nil:
			checks = append(checks, check{e, e.count > 0, e.told})
		}
	}
	c.subs.mu.Unlock()
	var stale []*interest
	for _, ch := range checks {
		var want *provider
		if ch.interested {
			if p := c.owner(s, ch.e.uri); p != nil && p.offers.Subscriptions {
				want = p
			}
		}
		if !sameInstance(ch.told, want) {
			stale = append(stale, ch.e)
		}
	}
	if len(stale) == 0 {
		return
	}
	c.subs.mu.Lock()
	for _, e := range stale {
		if e.busy == 0 {
			c.background(e)
		} else {
			e.stale = true
		}
	}
	c.subs.mu.Unlock()
}

// OnResourceUpdated registers fn to be called with the URI of each
// resource whose contents changed (ResourceUpdated) while someone is
// subscribed to it; cancel stops it. fn is called on the goroutine of the
// provider that reported the change, so it must not block. After cancel
// returns, fn is not started again.
func (c *Catalog) OnResourceUpdated(fn func(uri string)) (cancel func()) {
	l := &listener{fn: fn}
	s := &c.subs
	s.listenMu.Lock()
	s.listeners = append(s.listeners[:len(s.listeners):len(s.listeners)], l)
	s.listenMu.Unlock()
	return func() {
		l.cancelled.Store(true)
		s.listenMu.Lock()
		defer s.listenMu.Unlock()
		for i, x := range s.listeners {
			if x == l {
				s.listeners = append(append([]*listener(nil), s.listeners[:i]...), s.listeners[i+1:]...)
				return
			}
		}
	}
}

// ResourceUpdated is how a provider (through the plugin manager or the
// device bridge) reports that the contents of the resource at uri
// changed. The listeners of OnResourceUpdated hear uri when provider is
// the one that serves it now (as for ReadResource) and someone is
// subscribed to it; otherwise the report is dropped (logged at debug
// level): a provider cannot speak for a URI another owns.
func (c *Catalog) ResourceUpdated(provider, uri string) {
	if p := c.owner(c.snap.Load(), uri); p == nil || p.name != provider {
		c.log.Debug("ignoring an update of a resource the provider does not serve", "provider", provider, "uri", uri)
		return
	}
	c.subs.mu.Lock()
	e := c.subs.byURI[uri]
	interested := e != nil && e.count > 0
	c.subs.mu.Unlock()
	if !interested {
		return
	}
	c.subs.listenMu.Lock()
	ls := c.subs.listeners
	c.subs.listenMu.Unlock()
	for _, l := range ls {
		if !l.cancelled.Load() {
			l.fn(uri)
		}
	}
}
