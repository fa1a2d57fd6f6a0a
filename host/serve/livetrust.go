package serve

import (
	"context"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/trust"
)

// liveTrust is the manager's Trust in a serving host: the trust block's
// Checker (as packageTrust wraps it), which a reload replaces (swap), or
// none while every plugin is in mode open. The manager is given it once,
// and watches it once (Watch); a swap moves that watch to the new
// Checker's files and tells the manager to check every plugin again, as
// a change of the trust file does, so that a plugin the new block holds
// is quarantined and one it now allows starts, without a restart.
type liveTrust struct {
	allow map[string]string // packageTrust's: plughost serve --allow
	log   hclog.Logger

	mu  sync.Mutex
	cur *trust.Checker // nil: every plugin in mode open
	// ctx and changed are Watch's, once it was called; stopWatch stops
	// the watch of cur's files; watches counts the watches running, for
	// Watch's done.
	ctx       context.Context
	changed   func()
	stopWatch context.CancelFunc
	watches   sync.WaitGroup
	ended     bool // ctx ended: no watch starts any more
}

// newLiveTrust returns a liveTrust over c (nil: mode open).
func newLiveTrust(c *trust.Checker, allow map[string]string, log hclog.Logger) *liveTrust {
	return &liveTrust{cur: c, allow: allow, log: log}
}

// checker is the Checker now, wrapped as packageTrust; ok is false in
// mode open (no Checker).
func (t *liveTrust) checker() (packageTrust, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return packageTrust{Trust: t.cur, allow: t.allow}, t.cur != nil
}

func (t *liveTrust) Check(name, path, digest string) trust.Verdict {
	if c, ok := t.checker(); ok {
		return c.Check(name, path, digest)
	}
	return trust.Verdict{Mode: trust.ModeOpen, State: trust.StateOpen}
}

func (t *liveTrust) ModeOf(name string) trust.Mode {
	if c, ok := t.checker(); ok {
		return c.ModeOf(name)
	}
	return trust.ModeOpen
}

func (t *liveTrust) Forget(name string) {
	if c, ok := t.checker(); ok {
		c.Forget(name)
	}
}

// Watch watches the current Checker's files (and, after a swap, the new
// one's) until ctx ends, calling changed when they change and after each
// swap. done is closed once every watch has stopped.
func (t *liveTrust) Watch(ctx context.Context, changed func()) (<-chan struct{}, error) {
	t.mu.Lock()
	t.ctx, t.changed = ctx, changed
	err := t.watchLocked()
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		<-ctx.Done()
		t.mu.Lock()
		t.ended = true
		t.mu.Unlock()
		t.watches.Wait()
		close(done)
	}()
	return done, nil
}

// watchLocked starts the watch of t.cur's files; t.mu is held.
func (t *liveTrust) watchLocked() error {
	if t.cur == nil || t.ctx == nil || t.ended {
		return nil
	}
	ctx, cancel := context.WithCancel(t.ctx)
	done, err := t.cur.Watch(ctx, t.changed)
	if err != nil {
		cancel()
		return err
	}
	t.stopWatch = cancel
	t.watches.Go(func() { <-done })
	return nil
}

// swap makes c (nil: mode open for every plugin) the trust from now on:
// its files are watched instead of the old one's, and the manager is told
// to check every plugin again.
func (t *liveTrust) swap(c *trust.Checker) {
	t.mu.Lock()
	if t.stopWatch != nil {
		t.stopWatch()
		t.stopWatch = nil
	}
	t.cur = c
	if err := t.watchLocked(); err != nil {
		t.log.Error("cannot watch the new trust files: approvals and revocations take effect at the next reload or start", "error", err)
	}
	changed := t.changed
	t.mu.Unlock()
	if changed != nil {
		changed()
	}
}

// Checking reports whether a Checker is on (manager.Switchable): in mode
// open for every plugin the manager runs as without a trust.
func (t *liveTrust) Checking() bool {
	_, ok := t.checker()
	return ok
}
