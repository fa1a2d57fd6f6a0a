package manager

import (
	"context"
	"fmt"
	"time"
)

// stage is one state of a supervisor's life. Each has one method of life
// that does the stage's work and returns the next stage:
//
//	loading        → running (launched and published) | failed (launch failed)
//	running        → running (new tool list published) | reloading (file changed)
//	               | backoff or parked (the plugin died: see died)
//	reloading      → running (the new process, or the old one when the new failed)
//	backoff        → restarting (delay over) | loading (file changed)
//	restarting     → running | backoff or parked (launch failed: a death too)
//	parked, failed → loading (file changed)
//	every stage    → stopping (ctx ended)
//
// PluginStatus.State shows loading for loading and reloading, restarting
// for backoff and restarting, and the stage's own name otherwise.
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
	// stageStopping ends the supervisor: run unpublishes and stops the
	// plugin, and returns.
	stageStopping
)

var stageNames = [...]string{"loading", "running", "reloading", "backoff", "restarting", "parked", "failed", "stopping"}

func (st stage) String() string { return stageNames[st] }

// life is what the stages of one supervisor's run share; only run's
// goroutine touches it.
type life struct {
	s       *supervisor
	ctx     context.Context
	settled func() // run's: the first load succeeded or failed
	cur     *instance
	last    *provider   // cur's, as last published
	deaths  []time.Time // within CrashWindow
	// delay is the backoff before the coming restart, set by died.
	delay time.Duration
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
	l := &life{s: s, ctx: s.ctx, settled: settled}
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
		return l.awaitChange()
	}
	panic(fmt.Sprintf("manager: no stage %d", st))
}

// stop unpublishes and stops the running plugin, if any.
func (l *life) stop() {
	s := l.s
	if l.cur != nil {
		s.m.pub.Remove(s.name)
		l.cur.stop(s.m.opts.StopTimeout, true)
		l.cur = nil
	}
	s.update(func(st *PluginStatus) { st.PID = 0; st.Sandbox = nil })
}

func (l *life) loading() stage {
	s := l.s
	s.update(func(st *PluginStatus) { st.State = StateLoading })
	in, err := l.launch()
	switch {
	case l.ctx.Err() != nil:
		return stageStopping
	case err != nil:
		l.launchFailed(err)
		s.log.Error("plugin failed to load; it will be retried when its file changes", "error", err)
		s.update(func(st *PluginStatus) { st.State = StateFailed })
		l.settled()
		return stageFailed
	}
	l.publish(in, true)
	return stageRunning
}

func (l *life) restarting() stage {
	in, err := l.launch()
	switch {
	case l.ctx.Err() != nil:
		return stageStopping
	case err != nil:
		l.launchFailed(err)
		l.s.log.Error("plugin failed to restart", "error", err)
		return l.died(err)
	}
	l.publish(in, false)
	return stageRunning
}

// launch starts the plugin; when ctx ended meanwhile, it stops what
// started and the caller goes to stageStopping.
func (l *life) launch() (*instance, error) {
	in, err := l.s.launch(l.ctx)
	if l.ctx.Err() != nil && in != nil {
		in.stop(0, true)
	}
	return in, err
}

// launchFailed records a failed (re)start of a plugin that is down.
func (l *life) launchFailed(err error) {
	l.s.update(func(st *PluginStatus) { st.LastError = err.Error(); st.PID = 0; st.Sandbox = nil })
	l.s.settleChanges()
}

// publish makes in the running instance and publishes it; a load (not a
// restart after a death) clears the last error.
func (l *life) publish(in *instance, clearErr bool) {
	s := l.s
	l.cur = in
	s.running(in, clearErr)
	l.last = &provider{in: in, lists: in.lists}
	s.m.pub.Set(l.last)
	s.log.Info("plugin loaded", append([]any{"pid", in.pid(), "version", in.desc.Name + " " + in.desc.Version}, counts(in.lists)...)...)
	l.settled()
	s.settleChanges()
}

func (l *life) running() stage {
	s := l.s
	cur := l.cur
	select {
	case <-l.ctx.Done():
		return stageStopping

	case <-cur.exited():
		s.m.pub.Remove(s.name)
		desc := cur.getRunner().exitDescription()
		cur.stop(0, false)
		err := fmt.Errorf("exited: %s", desc)
		if t := cur.stderr.String(); t != "" {
			err = fmt.Errorf("%w (stderr: %q)", err, t)
		}
		l.cur = nil
		s.log.Error("plugin exited", "error", err)
		s.update(func(st *PluginStatus) { st.LastError = err.Error(); st.PID = 0; st.count(lists{}); st.Sandbox = nil })
		return l.died(err)

	case <-cur.changed:
		ls, err := cur.list(l.ctx, l.last.lists, cur.takeKinds())
		if err != nil {
			if l.ctx.Err() == nil {
				s.log.Warn("listing what the plugin offers after it announced a change", "error", err)
			}
			return stageRunning // if the plugin died, the next round sees it
		}
		s.update(func(st *PluginStatus) { st.count(ls) }) // before Set: whoever sees the Set sees this
		l.last = &provider{in: cur, lists: ls}
		s.m.pub.Set(l.last)
		s.log.Info("plugin offers changed", counts(ls)...)
		return stageRunning

	case <-s.changed:
		return stageReloading
	}
}

// reloading starts the new process and publishes it before stopping the
// old one, so that clients see no gap in the tool list.
func (l *life) reloading() stage {
	s := l.s
	s.update(func(st *PluginStatus) { st.State = StateLoading })
	in, err := l.launch()
	switch {
	case l.ctx.Err() != nil:
		return stageStopping
	case err != nil:
		s.log.Error("reloading the changed plugin failed; the running process keeps serving", "error", err)
		s.update(func(st *PluginStatus) { st.State = StateRunning; st.LastError = err.Error() })
		s.settleChanges()
		return stageRunning
	}
	old := l.cur
	l.cur = in
	l.deaths = nil
	s.running(in, true)
	l.last = &provider{in: in, lists: in.lists}
	s.m.pub.Set(l.last)
	s.log.Info("plugin reloaded", append([]any{"pid", in.pid(), "version", in.desc.Name + " " + in.desc.Version}, counts(in.lists)...)...)
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

	if len(l.deaths) >= o.CrashLimit {
		why := fmt.Sprintf("crashed %d times within %v; parked until the file changes", len(l.deaths), o.CrashWindow)
		s.update(func(st *PluginStatus) { st.State = StateParked; st.LastError = err.Error() + "; " + why })
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
	}
}

// awaitChange waits, parked or failed, for the plugin's file to change.
func (l *life) awaitChange() stage {
	select {
	case <-l.ctx.Done():
		return stageStopping
	case <-l.s.changed:
		l.deaths = nil
		return stageLoading
	}
}
