package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// supervisor owns one plugin file: it loads it, publishes it, restarts it
// when it dies, reloads it when the file changes, and unloads it. All
// Publisher calls for its name come from its goroutine, so they are ordered.
type supervisor struct {
	m      *Manager
	name   string
	path   string
	log    hclog.Logger
	cancel context.CancelFunc // unloads the plugin
	ctx    context.Context

	// prev, when not nil, is closed once the previous supervisor of this
	// name has unloaded; run waits for it before publishing anything.
	prev <-chan struct{}
	// changed carries "the file changed" (coalesced).
	changed chan struct{}
	// done is closed when run returns: the plugin is unloaded.
	done chan struct{}

	mu sync.Mutex
	st PluginStatus
	// loaded is the plugin file as it was when last launched: a directory
	// event that leaves it so (a late event of the same copy) reloads nothing.
	loaded os.FileInfo
	// onSettle holds the callbacks of file changes not yet acted on; they
	// are called once the plugin is published again, or failed, or gone.
	onSettle []func()
}

func newSupervisor(ctx context.Context, m *Manager, f file) *supervisor {
	ctx, cancel := context.WithCancel(ctx)
	return &supervisor{
		m:       m,
		name:    f.name,
		path:    f.path,
		log:     m.log.With("plugin", f.name),
		ctx:     ctx,
		cancel:  cancel,
		changed: make(chan struct{}, 1),
		done:    make(chan struct{}),
		st:      PluginStatus{Name: f.name, Path: f.path, State: StateLoading, Renamed: f.renamed},
	}
}

// unload makes run unload the plugin and return.
func (s *supervisor) unload() { s.cancel() }

// fileChanged makes run reload the plugin (or load it if it failed or is
// parked), and then call settled.
func (s *supervisor) fileChanged(settled func()) {
	s.mu.Lock()
	s.onSettle = append(s.onSettle, settled)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// settleChanges calls the callbacks of the file changes acted on so far.
func (s *supervisor) settleChanges() {
	s.mu.Lock()
	fs := s.onSettle
	s.onSettle = nil
	s.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func (s *supervisor) snapshot() PluginStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

func (s *supervisor) update(f func(st *PluginStatus)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.st)
}

// running records a freshly published instance.
func (s *supervisor) running(in *instance, clearErr bool) {
	s.update(func(st *PluginStatus) {
		st.State = StateRunning
		st.PID = in.pid()
		st.Sandbox = nil
		if r := in.getRunner(); r != nil {
			st.Sandbox = r.Layers()
		}
		st.Version = in.desc.Name + " " + in.desc.Version
		st.Tools = len(in.tools)
		if clearErr {
			st.LastError = ""
		}
	})
}

// next says how the supervisor goes on after waiting.
type next int

const (
	nextStop    next = iota // ctx ended: unload and return
	nextRestart             // restart after a death
	nextLoad                // the file changed: load afresh
)

// run is the plugin's life. settled is called once the first load has
// succeeded or failed.
func (s *supervisor) run(settled func()) {
	ctx := s.ctx
	defer close(s.done)
	defer s.settleChanges()
	defer settled()
	defer s.cancel()
	if s.prev != nil {
		select {
		case <-s.prev:
		case <-ctx.Done():
			return
		}
	}

	var (
		cur     *instance
		deaths  []time.Time // within CrashWindow
		restart bool        // the coming launch restarts a plugin that died
	)
	defer func() {
		if cur != nil {
			s.m.pub.Remove(s.name)
			cur.stop(s.m.opts.StopTimeout, true)
		}
		s.update(func(st *PluginStatus) { st.PID = 0; st.Sandbox = nil })
	}()

	for {
		if cur == nil {
			if !restart {
				s.update(func(st *PluginStatus) { st.State = StateLoading })
			}
			in, err := s.launch(ctx)
			if ctx.Err() != nil {
				if in != nil {
					in.stop(0, true)
				}
				return
			}
			if err != nil {
				s.update(func(st *PluginStatus) { st.LastError = err.Error(); st.PID = 0; st.Sandbox = nil })
				s.settleChanges()
				var n next
				if restart {
					s.log.Error("plugin failed to restart", "error", err)
					n = s.afterDeath(ctx, &deaths, err)
				} else {
					s.log.Error("plugin failed to load; it will be retried when its file changes", "error", err)
					s.update(func(st *PluginStatus) { st.State = StateFailed })
					settled()
					n = s.awaitChange(ctx)
				}
				if n == nextStop {
					return
				}
				if n == nextLoad {
					deaths = nil
				}
				restart = n == nextRestart
				continue
			}
			cur = in
			s.running(in, !restart)
			s.m.pub.Set(&provider{in: in, tools: in.tools})
			s.log.Info("plugin loaded", "pid", in.pid(), "version", in.desc.Name+" "+in.desc.Version, "tools", len(in.tools))
			settled()
			s.settleChanges()
		}

		select {
		case <-ctx.Done():
			return

		case <-cur.exited():
			s.m.pub.Remove(s.name)
			desc := cur.getRunner().exitDescription()
			cur.stop(0, false)
			err := fmt.Errorf("exited: %s", desc)
			if t := cur.stderr.String(); t != "" {
				err = fmt.Errorf("%w (stderr: %q)", err, t)
			}
			cur = nil
			s.log.Error("plugin exited", "error", err)
			s.update(func(st *PluginStatus) { st.LastError = err.Error(); st.PID = 0; st.Tools = 0; st.Sandbox = nil })
			n := s.afterDeath(ctx, &deaths, err)
			if n == nextStop {
				return
			}
			if n == nextLoad {
				deaths = nil
			}
			restart = n == nextRestart

		case <-cur.changed:
			tools, err := cur.listTools(ctx)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("listing tools after the plugin announced a change", "error", err)
				}
				continue // if the plugin died, the next round sees it
			}
			s.update(func(st *PluginStatus) { st.Tools = len(tools) }) // before Set: whoever sees the Set sees this
			s.m.pub.Set(&provider{in: cur, tools: tools})
			s.log.Info("plugin tools changed", "tools", len(tools))

		case <-s.changed:
			// Start the new process and publish it before stopping the old
			// one, so that clients see no gap in the tool list.
			s.update(func(st *PluginStatus) { st.State = StateLoading })
			in, err := s.launch(ctx)
			if ctx.Err() != nil {
				if in != nil {
					in.stop(0, true)
				}
				return
			}
			if err != nil {
				s.log.Error("reloading the changed plugin failed; the running process keeps serving", "error", err)
				s.update(func(st *PluginStatus) { st.State = StateRunning; st.LastError = err.Error() })
				s.settleChanges()
				continue
			}
			old := cur
			cur = in
			deaths = nil
			s.running(in, true)
			s.m.pub.Set(&provider{in: in, tools: in.tools})
			s.log.Info("plugin reloaded", "pid", in.pid(), "version", in.desc.Name+" "+in.desc.Version, "tools", len(in.tools))
			s.settleChanges()
			old.stop(s.m.opts.StopTimeout, true)
		}
	}
}

// afterDeath records a death and waits: for the restart backoff, or, when the
// plugin has died CrashLimit times within CrashWindow, for its file to change.
func (s *supervisor) afterDeath(ctx context.Context, deaths *[]time.Time, err error) next {
	o := &s.m.opts
	now := time.Now()
	recent := (*deaths)[:0]
	for _, t := range *deaths {
		if now.Sub(t) < o.CrashWindow {
			recent = append(recent, t)
		}
	}
	recent = append(recent, now)
	*deaths = recent

	if len(recent) >= o.CrashLimit {
		why := fmt.Sprintf("crashed %d times within %v; parked until the file changes", len(recent), o.CrashWindow)
		s.update(func(st *PluginStatus) { st.State = StateParked; st.LastError = err.Error() + "; " + why })
		s.log.Error("plugin parked", "reason", why, "last_error", err)
		return s.awaitChange(ctx)
	}

	delay := o.BackoffInitial
	for range len(recent) - 1 {
		if delay >= o.BackoffMax/2 {
			delay = o.BackoffMax
			break
		}
		delay *= 2
	}
	delay = min(delay, o.BackoffMax)
	s.update(func(st *PluginStatus) { st.State = StateRestarting })
	s.log.Warn("restarting plugin", "in", delay, "recent_deaths", len(recent))
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nextStop
	case <-s.changed:
		return nextLoad
	case <-timer.C:
		s.update(func(st *PluginStatus) { st.Restarts++ })
		return nextRestart
	}
}

// awaitChange waits for the plugin's file to change.
func (s *supervisor) awaitChange(ctx context.Context) next {
	select {
	case <-ctx.Done():
		return nextStop
	case <-s.changed:
		return nextLoad
	}
}

// launch starts the plugin, retrying a few times while its file is still open
// for writing (ETXTBSY: a copy that has written its last byte but not yet
// closed the file, which brings no further directory event).
func (s *supervisor) launch(ctx context.Context) (*instance, error) {
	if fi, err := os.Stat(s.path); err == nil {
		s.mu.Lock()
		s.loaded = fi
		s.mu.Unlock()
	}
	delay := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		in, err := launch(ctx, &s.m.opts, s.name, s.path)
		if err == nil || attempt == busyRetries || !textFileBusy(err) || ctx.Err() != nil {
			return in, err
		}
		s.log.Debug("plugin file is still open for writing; retrying", "in", delay)
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
		delay *= 2
	}
}

// busyRetries bounds the attempts of launch on a busy file (20ms … 320ms).
const busyRetries = 5

// textFileBusy reports whether err is exec's ETXTBSY, also when it arrives as
// the sandbox stage's message.
func textFileBusy(err error) bool {
	return errors.Is(err, syscall.ETXTBSY) || strings.Contains(err.Error(), "text file busy")
}

// unchanged reports whether the plugin file is still the one last launched:
// same inode, size, modification time and mode.
func (s *supervisor) unchanged() bool {
	fi, err := os.Stat(s.path)
	s.mu.Lock()
	defer s.mu.Unlock()
	return err == nil && s.loaded != nil && os.SameFile(fi, s.loaded) &&
		fi.Size() == s.loaded.Size() && fi.ModTime().Equal(s.loaded.ModTime()) && fi.Mode() == s.loaded.Mode()
}
