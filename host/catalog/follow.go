package catalog

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/plughost/plughost/host/tool"
)

// ProviderTools is what one provider exposes of its tools.
type ProviderTools struct {
	// Provider is the provider's name.
	Provider string
	// About is the provider's title and description (tool.Describer);
	// zero when it has none, or Tools is nil.
	About tool.About
	// Tools are its exposed tools as ListTools serves them (the MCP Tool
	// objects, compact, "name" the exposed name), sorted by exposed name;
	// nil when the provider is gone or exposes no tool. The slice and its
	// items are shared and must not be modified.
	Tools []json.RawMessage
}

// FollowTools calls fn with the exposed tools of every provider whose
// exposed tools or About changed: first with every provider, then after
// each Set or Remove that changed what some provider exposes, including a
// provider whose tools another one's arrival renamed (a name clash). It
// is what a search index of the tools follows (host/toolsearch).
//
// Unlike Subscribe, fn does not wait for a burst of changes to go quiet:
// a follower keeps up at once (a Set of 1,000 tools reaches fn as soon as
// it is published). Calls come from a goroutine of the follower's own,
// one at a time; the changes published while fn runs reach it in one
// next call, so a slow fn merges changes, never delays Set or Remove,
// and never misses a change. stop ends the following and waits for a
// call of fn in progress, so it must not be called from fn.
// AwaitFollowers waits until every follower has caught up.
func (c *Catalog) FollowTools(fn func([]ProviderTools)) (stop func()) {
	f := &follower{
		fn:      fn,
		changed: make(chan struct{}, 1),
		done:    make(chan struct{}),
		caught:  make(chan struct{}),
		last:    map[string]followed{},
	}
	c.mu.Lock()
	c.followers = append(c.followers[:len(c.followers):len(c.followers)], f)
	c.mu.Unlock()
	f.notify() // the first call: every provider (a Set since may have notified already)
	f.wg.Add(1)
	go f.run(c)
	return func() {
		c.mu.Lock()
		i := slices.Index(c.followers, f)
		if i < 0 {
			c.mu.Unlock()
			return // stopped already
		}
		c.followers = slices.Delete(slices.Clone(c.followers), i, i+1)
		c.mu.Unlock()
		close(f.done)
		f.wg.Wait()
	}
}

// AwaitFollowers waits until every follower (FollowTools) has handed its
// fn what the catalog publishes now, and fn has returned; or until ctx
// ends, whose error it then returns. The host waits for it before it
// serves searches: the plugins found at start are then all searchable.
func (c *Catalog) AwaitFollowers(ctx context.Context) error {
	c.mu.Lock()
	gen, fs := c.snap.Load().toolsGen, c.followers
	c.mu.Unlock()
	for _, f := range fs {
		for {
			f.mu.Lock()
			followed, caught := f.followed, f.caught
			f.mu.Unlock()
			if followed >= gen {
				break
			}
			select {
			case <-caught:
			case <-f.done: // stopped: nothing more to wait for
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// follower is one FollowTools: what it last handed to fn, by provider.
type follower struct {
	fn      func([]ProviderTools)
	changed chan struct{} // capacity 1: a snapshot not yet followed
	done    chan struct{} // closed by stop
	wg      sync.WaitGroup
	last    map[string]followed // owned by run

	mu       sync.Mutex
	followed uint64        // the gen of the last snapshot fn was handed (0: none)
	caught   chan struct{} // closed, and replaced, when followed grows
}

// notify tells the follower a new snapshot is published. It never blocks:
// a signal already waiting covers this snapshot too.
func (f *follower) notify() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// run hands fn the differences between each newest snapshot and the last
// one it followed.
func (f *follower) run(c *Catalog) {
	defer f.wg.Done()
	for {
		select {
		case <-f.done:
			return
		case <-f.changed:
		}
		s := c.snap.Load()
		if diff := f.diff(s); len(diff) > 0 {
			f.fn(diff)
		}
		f.mu.Lock()
		f.followed = s.gen
		close(f.caught)
		f.caught = make(chan struct{})
		f.mu.Unlock()
	}
}

// followed is what a follower was last handed of one provider.
type followed struct {
	tools []json.RawMessage
	about tool.About
}

// diff returns the providers whose tools or About in s differ from those
// last followed, by name, and records s as followed.
func (f *follower) diff(s *snapshot) []ProviderTools {
	now := make(map[string]followed, len(s.tools.byProvider))
	for name, tools := range s.tools.byProvider {
		now[name] = followed{tools, s.providers[name].about}
	}
	var out []ProviderTools
	for name, n := range now {
		if l, ok := f.last[name]; !ok || l.about != n.about || !sameItems(l.tools, n.tools) {
			out = append(out, ProviderTools{Provider: name, About: n.about, Tools: n.tools})
		}
	}
	for name := range f.last {
		if _, ok := now[name]; !ok {
			out = append(out, ProviderTools{Provider: name})
		}
	}
	f.last = now
	slices.SortFunc(out, func(a, b ProviderTools) int { return cmp.Compare(a.Provider, b.Provider) })
	return out
}

// aboutChanged reports whether a provider exposing tools in s has another
// About than it had in old: a follower must hear of it, though no list
// changed.
func aboutChanged(old, s *snapshot) bool {
	for name := range s.tools.byProvider {
		if o := old.providers[name]; o != nil && o.about != s.providers[name].about {
			return true
		}
	}
	return false
}

// sameItems reports whether a and b hold the same JSON, item by item.
func sameItems(a, b []json.RawMessage) bool {
	return slices.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}
