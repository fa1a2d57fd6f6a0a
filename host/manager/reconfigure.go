package manager

import (
	"slices"
	"time"

	"github.com/plughost/plughost/host/override"
)

// A configuration reloaded while the plugins run (issue 35): the host
// keeps its Options, but the functions among them (Fingerprint, StartFor,
// StartTimeoutFor, ExposeFor, Denied, Launcher, Hooks, Trust) may answer
// otherwise from then on, and Reconfigure brings the running plugins in
// line with their new answers.

// launchConf is what a supervisor reads of Options about its plugin: when
// it runs, and the digest of how it is launched.
type launchConf struct {
	lazy        bool
	idle        time.Duration
	fingerprint string
}

// launchConf reads the named plugin's start mode, idle timeout and
// launch configuration digest from o.
func (o *Options) launchConf(name string) *launchConf {
	mode, idle := o.Start, o.IdleTimeout
	if o.StartFor != nil {
		m, d := o.StartFor(name)
		if m != "" {
			mode = m
		}
		if d > 0 {
			idle = d
		}
	}
	return &launchConf{lazy: mode == StartLazy, idle: idle, fingerprint: o.fingerprint(name)}
}

// fingerprint is the named plugin's launch configuration digest.
func (o *Options) fingerprint(name string) string {
	if o.Fingerprint == nil {
		return ""
	}
	return o.Fingerprint(name)
}

// A Switchable Trust may check nothing for a while: Checking reports
// false while every plugin is in mode open, and the manager then runs
// as without Options.Trust (no file hashed for it, no verdict shown),
// until a reloaded configuration turns the checks on (the host's trust
// when it serves; Watch's changed tells the manager).
type Switchable interface {
	Trust
	Checking() bool
}

// checking reports whether Options.Trust checks the plugin files now.
func (o *Options) checking() bool {
	if s, ok := o.Trust.(Switchable); ok {
		return s.Checking()
	}
	return o.Trust != nil
}

// Reconfigure reads each plugin's launch configuration from Options
// again, after the host changed what its functions answer (a reloaded
// configuration), and returns the plugins it restarts, sorted, with a
// channel closed once each of them runs again (or failed, or is gone).
//
// A plugin whose fingerprint (Options.Fingerprint: its sandbox policy,
// its environment) changed is restarted as a changed file is reloaded:
// the new process is started under the new policy and published first,
// then the old one is stopped, its calls in flight allowed to finish
// within StopTimeout; if the new one fails, the old one keeps serving and
// the failure is its LastError. A plugin that is down (failed, parked,
// backing off) is loaded again, as the new policy may be what it lacked.
// A lazy plugin that is idle, and a quarantined one, run nothing: the
// next start launches under the new policy. The others are not touched.
//
// A new start mode or idle timeout takes effect at the plugin's next
// start (a running eager plugin turned lazy is stopped once idle after
// it next starts; an idle lazy one turned eager waits for a request);
// an idle timeout at the next idle check of a running lazy plugin. The
// change events of the restarts reach the Publisher at once when it is
// a Holder, as a burst of file changes does.
func (m *Manager) Reconfigure() (restarted []string, settled <-chan struct{}) {
	b := m.newBurst()
	m.mu.Lock()
	for name, s := range m.plugins {
		next := m.opts.launchConf(name)
		old := s.conf.Swap(next)
		if old.fingerprint == next.fingerprint {
			continue
		}
		switch s.snapshotState() {
		case StateIdle, StateQuarantined:
			continue // nothing runs: its next launch reads the new policy
		}
		restarted = append(restarted, name)
		s.log.Info("the plugin's launch configuration (sandbox policy, environment) changed; restarting it")
		s.fileChanged(b.add()) // restarted as a changed file is reloaded
	}
	m.mu.Unlock()
	b.seal()
	slices.Sort(restarted)
	return restarted, b.settled
}

// Recheck checks every plugin's trust again and shows its listing again:
// what Options.Trust, Options.ExposeFor or Options.Hooks answer may have
// changed (a reloaded configuration), so that a plugin its trust now
// refuses is quarantined, one it allows again loads, and the definitions
// are exposed, screened by the hooks and pinned as they now say. It
// returns at once; each plugin's goroutine does the work.
func (m *Manager) Recheck() { m.recheckAll() }

// SetOverrides makes o (nil: none) the override blocks applied from now
// on, in place of Options.Overrides: each plugin's listing applies them
// the next time it is shown (Recheck shows every one again).
func (m *Manager) SetOverrides(o *override.Set) { m.overrides.Store(o) }

// snapshotState is the plugin's state now.
func (s *supervisor) snapshotState() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.State
}
