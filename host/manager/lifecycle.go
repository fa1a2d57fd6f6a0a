package manager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/trust"
)

// stage is one state of a supervisor's life. Each has one method of life
// that does the stage's work and returns the next stage:
//
//	loading        → running (launched and published) | failed (launch failed)
//	               | idle (lazy, published from its cache entry)
//	               | backoff or parked (killed by a signal while starting)
//	running        → running (new tool list published) | reloading (file changed)
//	               | backoff or parked (the plugin died: see died)
//	               | idle (lazy, nothing to do for its idle timeout: stopped)
//	idle           → waking (a request needs it) | loading (file changed)
//	waking         → running | idle or parked (the start failed: a death too)
//	reloading      → running (the new process, or the old one when the new failed)
//	backoff        → restarting (delay over) | loading (file changed)
//	restarting     → running | backoff or parked (launch failed: a death too)
//	parked, failed → loading (file changed)
//	quarantined    → loading (file changed, or trusted now)
//	every stage    → stopping (ctx ended)
//	every stage    → quarantined (Options.Trust refuses the file: at a
//	                 launch, or when its trust changes)
//
// PluginStatus.State shows loading for loading, reloading and waking,
// restarting for backoff and restarting, and the stage's own name
// otherwise.
type stage int

const (
	// stageLoading launches the plugin: its first load, or a load after
	// its file changed while it was down.
	stageLoading stage = iota
	// stageRunning serves the published plugin until it dies, announces new
	// tools, its file changes or ctx ends.
	stageRunning
	// stageReloading starts the changed file's plugin beside the running
	// one, publishes it and stops the old one; if it fails to load, the old
	// one keeps serving.
	stageReloading
	// stageBackoff waits before restarting a plugin that died.
	stageBackoff
	// stageRestarting launches a plugin again after it died.
	stageRestarting
	// stageParked waits for the file of a plugin that died too often to
	// change.
	stageParked
	// stageFailed waits for the file of a plugin that could not be loaded
	// to change.
	stageFailed
	// stageIdle waits, published but stopped, for a request to a lazy
	// plugin (or for its file to change).
	stageIdle
	// stageWaking starts an idle lazy plugin for the requests waiting.
	stageWaking
	// stageQuarantined waits, unpublished and stopped, for the file of a
	// plugin Options.Trust refused, or its trust, to change.
	stageQuarantined
	// stageStopping ends the supervisor: run unpublishes and stops the
	// plugin, and returns.
	stageStopping
)

var stageNames = [...]string{"loading", "running", "reloading", "backoff", "restarting", "parked", "failed", "idle", "waking", "quarantined", "stopping"}

func (st stage) String() string { return stageNames[st] }

// life is what the stages of one supervisor's run share; only run's
// goroutine touches it.
type life struct {
	s       *supervisor
	ctx     context.Context
	settled func() // run's: the first load succeeded or failed
	cur     *instance
	last    *provider // as last published; nil when none is
	// listed is what the plugin offers as last listed, before vet: shown
	// again when the approvals change.
	listed lists
	// epoch numbers the processes behind the publications, as the catalog
	// must tell them apart (provider.Instance).
	epoch int
	// idleWait is how long running waits before it looks whether a lazy
	// plugin is idle (0: its idle timeout).
	idleWait time.Duration
	deaths   []time.Time // within CrashWindow
	// delay is the backoff before the coming restart, set by died.
	delay time.Duration
	// orphaned: the process behind the published provider died; the next
	// process adopted is published afresh (the catalog tells it of the
	// resource subscriptions), whatever it offers.
	orphaned bool
}

// run is the plugin's life: it goes from stage to stage until ctx ends.
// settled is called once the first load has succeeded or failed.
func (s *supervisor) run(settled func()) {
	defer close(s.done)
	defer s.settleChanges()
	defer settled()
	defer s.cancel()
	if s.prev != nil {
		select {
		case <-s.prev:
		case <-s.ctx.Done():
			return
		}
	}
	l := &life{s: s, ctx: s.ctx, settled: settled, last: s.cached}
	if s.cached != nil {
		l.listed = s.stored.lists() // what the cached provider was vetted from
		s.announceDefs()            // its publication, by spawn's caller, is made
	}
	defer l.stop()
	for st := stageLoading; st != stageStopping; {
		next := l.step(st)
		s.log.Trace("plugin stage", "from", st, "to", next)
		st = next
	}
}

// step runs one stage and returns the next.
func (l *life) step(st stage) stage {
	switch st {
	case stageLoading:
		return l.loading()
	case stageRunning:
		return l.running()
	case stageReloading:
		return l.reloading()
	case stageBackoff:
		return l.backoff()
	case stageRestarting:
		return l.restarting()
	case stageParked, stageFailed:
		return l.awaitChange(st)
	case stageIdle:
		return l.idling()
	case stageWaking:
		return l.waking()
	case stageQuarantined:
		return l.quarantined()
	}
	panic(fmt.Sprintf("manager: no stage %d", st))
}

// stop unpublishes and stops the running plugin, if any.
func (l *life) stop() {
	s := l.s
	s.g.close("was unloaded")
	if l.last != nil {
		s.m.pub.Remove(s.name)
		l.last = nil
	}
	if l.cur != nil {
		l.cur.stop(s.m.opts.StopTimeout, true)
		l.cur = nil
	}
	s.update(func(st *PluginStatus) { st.PID = 0; st.Sandbox = nil })
}

func (l *life) loading() stage {
	s := l.s
	lazy := s.conf.Load().lazy
	if lazy && s.m.opts.checking() {
		// Published from the cache, it would be served before any launch
		// checks it.
		v, pf := s.checkTrust()
		pf.close()
		if !v.Allowed() {
			return l.quarantine(v)
		}
	}
	if lazy && l.fromCache() {
		return stageIdle
	}
	s.update(func(st *PluginStatus) { st.State = StateLoading })
	select { // at most LoadConcurrency plugins load at once
	case s.m.loadSem <- struct{}{}:
	case <-l.ctx.Done():
		return stageStopping
	}
	defer func() { <-s.m.loadSem }() // after publishing
	r := l.launch()
	switch r.outcome {
	case launchCancelled:
		return stageStopping
	case launchRefused:
		return l.quarantine(r.verdict)
	case launchFailure:
		return l.loadFailed(r.err)
	}
	l.publish(r.in, true)
	return stageRunning
}

// loadFailed decides what a failed load comes to: a start killed by a
// signal, or a remote server out of reach, is retried as a death is; any
// other failure waits for the file to change.
func (l *life) loadFailed(err error) stage {
	s := l.s
	l.launchFailed(err)
	switch {
	case errors.As(err, new(*killedStarting)):
		s.log.Error("plugin was killed while loading; restarting it", "error", err)
		l.settled()
		return l.holdRequests(l.died(err), "was killed while loading")
	case s.remote():
		// A remote server that cannot be reached now may be later: it is
		// retried as a crashed plugin is restarted.
		s.reportFailure("remote server unreachable; retrying", err)
		l.unpublish("is unreachable: " + err.Error())
		l.settled()
		return l.died(err)
	}
	s.reportFailure("plugin failed to load; it will be retried when its file changes", err)
	l.unpublish("failed to load: " + err.Error())
	s.update(func(st *PluginStatus) { st.State = StateFailed })
	l.settled()
	return stageFailed
}

// unpublish withdraws the plugin's provider, if published; requests
// through it fail with "plugin <name> <why>".
func (l *life) unpublish(why string) {
	l.s.g.close(why)
	if l.last != nil {
		l.s.m.pub.Remove(l.s.name)
		l.last = nil
		l.epoch++ // the next publication is of another process
	}
	l.orphaned = false
}

func (l *life) restarting() stage {
	r := l.launch()
	switch r.outcome {
	case launchCancelled:
		return stageStopping
	case launchRefused:
		return l.quarantine(r.verdict)
	case launchFailure:
		l.launchFailed(r.err)
		l.s.g.fail(r.err) // the requests waiting for this start
		l.s.reportFailure("plugin failed to restart", r.err)
		return l.holdRequests(l.died(r.err), "could not be restarted ("+r.err.Error()+")")
	}
	l.publish(r.in, false)
	return stageRunning
}

// launchOutcome is what came of a stage's launch of the plugin.
type launchOutcome int

const (
	// launchOK: the process runs; the stage publishes it.
	launchOK launchOutcome = iota
	// launchCancelled: ctx ended meanwhile (a process that started was
	// stopped again); the supervisor goes to stageStopping.
	launchCancelled
	// launchRefused: the trust check refused the file; the stage
	// quarantines the plugin.
	launchRefused
	// launchFailure: the process did not start; the stage decides what
	// a failed start comes to.
	launchFailure
)

// launched is what life.launch tells the stage that launched.
type launched struct {
	outcome launchOutcome
	// in is the running process (launchOK).
	in *instance
	// verdict is the trust check's refusal (launchRefused).
	verdict trust.Verdict
	// err is why no process runs (launchRefused: "quarantined: " and the
	// reason; launchFailure: the start's error).
	err error
}

// launch is the one launch sequence of the stages that start the plugin
// (loading, restarting, reloading, waking): it records the file as
// launched, checks its trust as late as can be (right before the process
// starts), starts the process, and sorts what came of it into the outcome
// the stage switches on. When ctx ended meanwhile the outcome is
// launchCancelled, whatever else happened.
func (l *life) launch() launched {
	s := l.s
	for attempt := 1; ; attempt++ {
		s.markLoaded()
		v, pf := s.checkTrust()
		if !v.Allowed() {
			pf.close()
			if l.ctx.Err() != nil {
				return launched{outcome: launchCancelled}
			}
			return launched{outcome: launchRefused, verdict: v, err: errors.New("quarantined: " + v.Reason)}
		}
		if !s.m.opts.checking() && s.m.cache != nil {
			s.bin = binaryID{} // zero when unreadable: nothing is stored
			if pf != nil {
				s.bin, _ = pf.identify(&s.bin)
			}
		}
		in, err := s.launch(l.ctx, pf.execFile())
		// Written in place between its hash and its exec (only its owner
		// can: see pluginFile): what runs may not be what was checked.
		rewritten := pf != nil && pf.changed()
		pf.close()
		switch {
		case l.ctx.Err() != nil:
			if in != nil {
				in.stop(0, true)
			}
			return launched{outcome: launchCancelled}
		case rewritten && attempt < rewriteRetries:
			if in != nil {
				in.stop(0, true)
			}
			s.log.Warn("plugin file was written while it started; stopped, and checked again")
			continue
		case rewritten:
			if in != nil {
				in.stop(0, true)
			}
			return launched{outcome: launchFailure, err: errors.New("the plugin file was written while it started, each time it was tried")}
		case err != nil:
			return launched{outcome: launchFailure, err: err}
		}
		return launched{outcome: launchOK, in: in}
	}
}

// rewriteRetries bounds the starts of a plugin whose file is written
// while it starts (life.launch).
const rewriteRetries = 3

// launchFailed records a failed (re)start of a plugin that is down.
func (l *life) launchFailed(err error) {
	l.s.update(func(st *PluginStatus) { l.s.setError(st, err, ""); st.PID = 0; st.Sandbox = nil })
	l.s.settleChanges()
}

// publish makes in the running instance and publishes it; a load (not a
// restart after a death) clears the last error.
func (l *life) publish(in *instance, clearErr bool) {
	l.adopt(in, clearErr, false, "plugin loaded")
	l.settled()
	l.s.settleChanges()
}

// adopt makes in the running instance, lets requests through the gate to
// it, shows what it offers (force: it replaces a running process, see
// show), and logs msg. The gate comes first: a call made as soon as the
// publication is seen (a client told list_changed) reaches this process,
// not the one it replaces.
func (l *life) adopt(in *instance, clearErr, force bool, msg string) {
	s := l.s
	l.cur = in
	l.idleWait = 0
	force = force || l.orphaned
	l.orphaned = false
	s.running(in, clearErr)
	s.recovered()
	s.g.set(in)
	l.show(in.desc, in.lists, force)
	s.log.Info(msg, append([]any{"pid", in.pid(), "version", in.desc.Name + " " + in.desc.Version}, counts(in.lists)...)...)
	s.m.hookPluginReady(s.name)
	s.event(EventLoaded)
}

// show publishes what the plugin offers, unless the published provider
// (from the cache, or an earlier process) offers the same and force is
// false, and brings the cache entry up to date. A reload forces it: the
// catalog then tells the new process of the resource subscriptions.
func (l *life) show(d pluginclient.Description, ls lists, force bool) {
	s := l.s
	l.listed = ls
	// What the configuration exposes, as approved (not as the plugin lists it).
	served, held := s.vet(s.screen(ls))
	if force || l.last == nil || !l.last.desc.Equal(d) || !sameLists(l.last.lists, served) || !maps.Equal(l.last.held, held) {
		if l.last != nil && !force {
			s.log.Debug("plugin offers other definitions than were published; publishing them")
		}
		if force {
			l.epoch++ // a new process: the catalog tells it again
		}
		l.last = &provider{name: s.name, g: s.g, desc: d, lists: served, epoch: l.epoch, held: held, passClaims: s.m.opts.PassClaims}
		s.m.pub.Set(l.last)
	}
	s.announceDefs()
	if s.m.cache == nil {
		return
	}
	if s.bin.SHA256 == "" {
		// The launch hashed the file it ran (checkTrust, or launch without
		// trust) and could not: unreadable, or written while hashed. The
		// path is not hashed again here, as it may hold other bytes than
		// those that run, whose definitions the entry would then carry.
		return
	}
	e := newEntry(s.name, s.bin, s.conf.Load().fingerprint, d, ls)
	if old := s.stored; old != nil && old.Key == e.Key && old.Binary == e.Binary && old.description().Equal(d) && sameLists(old.lists(), ls) {
		return
	}
	s.m.cache.store(e)
	s.stored = e
}

func (l *life) running() stage {
	s := l.s
	cur := l.cur
	var idle <-chan time.Time
	if conf := s.conf.Load(); conf.lazy {
		wait := l.idleWait
		if wait <= 0 {
			wait = conf.idle
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		idle = t.C
	}
	select {
	case <-l.ctx.Done():
		return stageStopping

	case <-idle:
		return l.stopIfIdle()

	case <-cur.exited():
		desc := cur.getRunner().exitDescription()
		cur.stop(0, false)
		err := withStderr(fmt.Errorf("exited: %s", desc), cur.stderrForError())
		l.cur = nil
		// It stays published while it restarts (its tools do not leave and
		// come back in every client's list); parking unpublishes it (died).
		l.orphaned = l.last != nil
		s.reportFailure("plugin exited", err)
		s.update(func(st *PluginStatus) { s.setError(st, err, ""); st.PID = 0; st.Sandbox = nil })
		return l.holdRequests(l.died(err), "exited ("+desc+")")

	case <-cur.changed:
		ls, err := cur.list(l.ctx, l.last.lists, cur.takeKinds())
		if err != nil {
			if l.ctx.Err() == nil {
				s.log.Warn("listing what the plugin offers after it announced a change", "error", err)
			}
			return stageRunning // if the plugin died, the next round sees it
		}
		s.update(func(st *PluginStatus) { st.count(ls) }) // before Set: whoever sees the Set sees this
		l.show(cur.desc, ls, false)
		s.log.Info("plugin offers changed", counts(ls)...)
		return stageRunning

	case <-s.changed:
		return stageReloading

	case <-s.recheck:
		return l.rechecked(stageRunning)
	}
}

// reloading starts the new process and publishes it before stopping the
// old one, so that clients see no gap in the tool list.
func (l *life) reloading() stage {
	s := l.s
	s.update(func(st *PluginStatus) { st.State = StateLoading })
	r := l.launch()
	switch r.outcome {
	case launchCancelled:
		return stageStopping
	case launchRefused:
		// The file that replaced it may not run: neither may the
		// process of the file it replaced, whose trust is gone with it.
		return l.quarantine(r.verdict)
	case launchFailure:
		s.reportFailure("reloading the changed plugin failed; the running process keeps serving", r.err)
		s.update(func(st *PluginStatus) { st.State = StateRunning; s.setError(st, r.err, "") })
		s.settleChanges()
		return stageRunning
	}
	old := l.cur
	l.deaths = nil
	l.adopt(r.in, true, true, "plugin reloaded")
	s.settleChanges()
	old.stop(s.m.opts.StopTimeout, true)
	return stageRunning
}

// died records a death (or a failed restart): the plugin is parked when it
// has died CrashLimit times within CrashWindow, else it backs off for
// BackoffInitial, doubled per further recent death, at most BackoffMax.
func (l *life) died(err error) stage {
	s, o := l.s, &l.s.m.opts
	now := time.Now()
	recent := l.deaths[:0]
	for _, t := range l.deaths {
		if now.Sub(t) < o.CrashWindow {
			recent = append(recent, t)
		}
	}
	l.deaths = append(recent, now)
	s.event(EventCrashed)

	if len(l.deaths) >= o.CrashLimit && !s.remote() { // a remote server is retried for as long as it is declared
		why := fmt.Sprintf("crashed %d times within %v; parked until the file changes", len(l.deaths), o.CrashWindow)
		l.unpublish("is parked: " + why)
		s.update(func(st *PluginStatus) { st.State = StateParked; s.setError(st, err, "; "+why) })
		s.event(EventParked) // before the log line, which tests await
		s.log.Error("plugin parked", "reason", why, "last_error", err)
		return stageParked
	}
	delay := o.BackoffInitial
	for range len(l.deaths) - 1 {
		if delay >= o.BackoffMax/2 {
			delay = o.BackoffMax
			break
		}
		delay *= 2
	}
	l.delay = min(delay, o.BackoffMax)
	s.update(func(st *PluginStatus) { st.State = StateRestarting })
	s.log.Warn("restarting plugin", "in", l.delay, "recent_deaths", len(l.deaths))
	return stageBackoff
}

// restartWait is the longest restart delay that requests to a plugin
// waiting to restart wait through (bounded by the gate's own wait); with a
// longer one they are refused at once.
const restartWait = 2 * time.Second

// holdRequests decides, when next is stageBackoff, what requests to the
// plugin meet until it restarts: they wait for the new process when it
// comes within restartWait, else they are refused at once with "plugin
// <name> <why> and restarts in <delay>".
func (l *life) holdRequests(next stage, why string) stage {
	if next != stageBackoff {
		return next
	}
	if l.delay <= restartWait {
		l.s.g.clear()
	} else {
		l.s.g.close(fmt.Sprintf("%s and restarts in %v", why, l.delay))
	}
	return next
}

// backoff waits for the restart delay; a file change meanwhile loads the
// plugin afresh.
func (l *life) backoff() stage {
	timer := time.NewTimer(l.delay)
	defer timer.Stop()
	select {
	case <-l.ctx.Done():
		return stageStopping
	case <-l.s.changed:
		l.deaths = nil
		return stageLoading
	case <-timer.C:
		l.s.update(func(st *PluginStatus) { st.Restarts++ })
		return stageRestarting
	case <-l.s.recheck:
		return l.rechecked(stageBackoff) // waits its whole delay again
	}
}

// awaitChange waits, parked or failed (st), for the plugin's file to
// change.
func (l *life) awaitChange(st stage) stage {
	select {
	case <-l.ctx.Done():
		return stageStopping
	case <-l.s.changed:
		l.deaths = nil
		return stageLoading
	case <-l.s.recheck:
		return l.rechecked(st)
	}
}
