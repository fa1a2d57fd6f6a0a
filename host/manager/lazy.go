package manager

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/plughost/plughost/host/tool"
)

// StartMode says when a plugin's process runs.
type StartMode string

// The start modes. In Options.Start the empty mode is StartEager; in what
// Options.StartFor returns it keeps Options.Start.
const (
	// StartEager: the plugin is started at once and kept running
	// (restarted when it dies).
	StartEager StartMode = "eager"
	// StartLazy: the plugin is started when a request needs it and
	// stopped after Options.IdleTimeout with nothing to do. Its
	// definitions stay published while it is stopped.
	StartLazy StartMode = "lazy"
)

// gate is where the published provider of a plugin finds the process to
// run a request on. Every provider the manager publishes goes through its
// supervisor's gate, so that a provider stays valid while its process is
// stopped and started again (a lazy plugin), or before it has started (a
// plugin published from the catalog cache).
type gate struct {
	name string
	// wait bounds how long a request waits for a process.
	wait time.Duration
	// wake carries "a request waits for a process" to the supervisor
	// (coalesced); only an idle lazy plugin acts on it.
	wake chan struct{}

	mu sync.Mutex
	// live is the process requests go to; nil when none runs.
	live *instance
	// down, when not empty, says why the plugin is not published
	// ("was unloaded"): requests fail at once.
	down string
	// failed is why the last start on demand failed.
	failed error
	// gen is closed and replaced whenever live, down or failed change.
	gen chan struct{}
}

func newGate(name string, wait time.Duration) *gate {
	return &gate{name: name, wait: wait, wake: make(chan struct{}, 1), gen: make(chan struct{})}
}

// change updates the gate under its lock and wakes every waiting request.
func (g *gate) change(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f()
	close(g.gen)
	g.gen = make(chan struct{})
}

// set makes in the process requests go to; the plugin is published.
func (g *gate) set(in *instance) {
	g.change(func() { g.live, g.down, g.failed = in, "", nil })
}

// clear says no process runs, but the plugin stays published: requests
// wait for one (and wake an idle lazy plugin).
func (g *gate) clear() {
	g.change(func() { g.live, g.down, g.failed = nil, "", nil })
}

// fail says a start on demand failed: the requests waiting fail with err.
func (g *gate) fail(err error) {
	g.change(func() { g.live, g.failed = nil, err })
}

// close says the plugin is no longer published: requests fail with
// "plugin <name> <why>".
func (g *gate) close(why string) {
	g.change(func() { g.live, g.down = nil, why })
}

// drainWake forgets a request's wake that came before now.
func (g *gate) drainWake() {
	select {
	case <-g.wake:
	default:
	}
}

// acquire returns the process to run a request on, entered (the caller
// must call leave): the running one, or one started for it. subject names
// the request for errors (`tool "x"`). It waits for a process at most
// g.wait, and not after ctx ends.
func (g *gate) acquire(ctx context.Context, subject string) (*instance, error) {
	var timeout <-chan time.Time
	waited := false
	for {
		g.mu.Lock()
		in, down, failed, gen := g.live, g.down, g.failed, g.gen
		g.mu.Unlock()
		e := entryStopping
		if in != nil {
			e = in.enter()
		}
		switch {
		case e == entryOK:
			return in, nil
		case e == entryFull:
			return nil, tool.Errorf(tool.ErrRefused, "%s of provider %q: plugin %s is running %d requests, its limit "+
				"(limits { plugin_in_flight }); retry when one ends", subject, g.name, g.name, in.opts.MaxInFlight)
		case down != "":
			return nil, tool.Errorf(tool.ErrRefused, "%s of provider %q: plugin %s %s", subject, g.name, g.name, down)
		case waited && in == nil && failed != nil:
			return nil, tool.Errorf(tool.ErrGone, "%s of provider %q: plugin %s could not be started: %w", subject, g.name, g.name, failed)
		case in == nil:
			select {
			case g.wake <- struct{}{}:
			default:
			}
		}
		// in is stopping (its supervisor changes the gate soon), or none
		// runs yet.
		if timeout == nil {
			t := time.NewTimer(g.wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-gen:
			waited = true
		case <-ctx.Done():
			return nil, fmt.Errorf("%s of provider %q: waiting for plugin %s to start: %w", subject, g.name, g.name, ctx.Err())
		case <-timeout:
			return nil, tool.Errorf(tool.ErrTimedOut, "%s of provider %q: plugin %s did not start within %v", subject, g.name, g.name, g.wait)
		}
	}
}

// idleFor says whether the instance has had nothing to do (no request in
// flight, no resource subscription held) for idle; if so it is marked
// stopping, atomically with that check, and stop must follow. Otherwise
// wait is how long until it may be idle.
func (in *instance) idleFor(idle time.Duration) (wait time.Duration, stopping bool) {
	in.callsMu.Lock()
	defer in.callsMu.Unlock()
	if in.stopping {
		return 0, true
	}
	if in.inFlight > 0 || len(in.subs) > 0 {
		return idle, false
	}
	if d := idle - time.Since(in.lastUsed); d > 0 {
		return d, false
	}
	in.stopping, in.unloaded = true, true
	close(in.idle)
	return 0, true
}

// subscribed records a resource subscription the plugin holds (or, with
// on false, no longer holds): a lazy plugin holding one is not stopped.
func (in *instance) subscribed(uri string, on bool) {
	in.callsMu.Lock()
	defer in.callsMu.Unlock()
	if on {
		if in.subs == nil {
			in.subs = make(map[string]bool)
		}
		in.subs[uri] = true
	} else {
		delete(in.subs, uri)
	}
}

// ready returns the running process, entered, if there is one and it
// takes requests; nil otherwise.
func (g *gate) ready() *instance {
	g.mu.Lock()
	in := g.live
	g.mu.Unlock()
	if in != nil && in.enter() == entryOK {
		return in
	}
	return nil // acquire waits for one, or says why not
}

// The stages of a lazy plugin's life (lifecycle.go).

// fromCache publishes the plugin from its cache entry, when it has a valid
// one, and reports whether it did: the entry the first scan published, or
// the one of the file as it is now. The plugin is then idle.
func (l *life) fromCache() bool {
	s := l.s
	fi, statErr := os.Stat(s.path) // before the lookup: a later change brings an event
	if s.cached != nil && l.last == s.cached {
		s.cached = nil // the first scan's: published already
	} else {
		e, id := s.m.cache.lookup(s.name, s.path, s.conf.Load().fingerprint)
		s.bin = id
		if e == nil {
			return false
		}
		s.stored = e
		d, ls := e.description(), e.lists()
		s.update(func(st *PluginStatus) {
			st.Version, st.Contract = d.Name+" "+d.Version, d.ContractVersion
			st.count(ls)
		})
		s.showRequests(s.requestsOf("", d, true))
		l.show(d, ls, false)
	}
	if statErr == nil {
		s.mu.Lock()
		s.loaded = fi // what sync compares a directory event with
		s.mu.Unlock()
	}
	s.g.clear()
	s.update(func(st *PluginStatus) { st.State = StateIdle; st.setError(nil, "") })
	l.settled()
	s.settleChanges()
	return true
}

// idling waits, published but stopped, for a request (or a file change).
func (l *life) idling() stage {
	s := l.s
	s.update(func(st *PluginStatus) { st.State = StateIdle; st.PID = 0; st.Sandbox = nil })
	select {
	case <-l.ctx.Done():
		return stageStopping
	case <-s.changed:
		l.deaths = nil
		return stageLoading
	case <-s.g.wake:
		return stageWaking
	case <-s.recheck:
		return l.rechecked(stageIdle)
	}
}

// waking starts the plugin for the requests waiting at its gate. A failed
// start fails them, and counts as a death.
func (l *life) waking() stage {
	s := l.s
	s.update(func(st *PluginStatus) { st.State = StateLoading })
	r := l.launch()
	switch r.outcome {
	case launchCancelled:
		return stageStopping
	case launchRefused:
		s.g.fail(r.err)
		return l.quarantine(r.verdict)
	case launchFailure:
		l.launchFailed(r.err)
		s.reportFailure("plugin failed to start on demand", r.err)
		s.g.fail(r.err)
		return l.died(r.err)
	}
	l.publish(r.in, false)
	return stageRunning
}

// stopIfIdle stops the running lazy plugin if it has had nothing to do
// for its idle timeout; its provider stays published.
func (l *life) stopIfIdle() stage {
	s, cur := l.s, l.cur
	idle := s.conf.Load().idle
	wait, stopping := cur.idleFor(idle)
	if !stopping {
		s.log.Trace("the lazy plugin is not idle; it keeps running", "look_again_in", wait)
		l.idleWait = wait
		return stageRunning
	}
	l.idleWait = 0
	s.g.drainWake() // wakes from before: they were for this process
	s.g.clear()
	l.cur = nil
	s.log.Info("stopping the idle plugin", "idle_timeout", idle)
	cur.stop(s.m.opts.StopTimeout, true)
	return stageIdle
}
