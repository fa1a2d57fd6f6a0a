package manager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/pluginproto"
)

// supervisor owns one plugin file: it loads it, publishes it, restarts it
// when it dies, reloads it when the file changes, and unloads it. All
// Publisher calls for its name come from its goroutine, so they are ordered.
// Its life is a sequence of stages (lifecycle.go), run by run.
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
	// recheck carries "the plugin's trust may have changed" (coalesced):
	// the trust files or its signature changed.
	recheck chan struct{}
	// done is closed when run returns: the plugin is unloaded.
	done chan struct{}
	// g is where every provider published for this plugin finds its
	// process.
	g *gate
	// conf is the plugin's start mode, idle timeout and launch
	// configuration digest, as last read from Options (reconfigure.go):
	// Manager.Reconfigure replaces it while run reads it.
	conf atomic.Pointer[launchConf]
	// bin is the plugin binary's identity as last taken (zero: unknown),
	// for its cache entry. Only run's goroutine touches it after spawn.
	bin binaryID
	// cached is the provider published from the cache before run started
	// (nil: none); run takes it over.
	cached *provider
	// stored is the cache entry as last read or written.
	stored *cacheEntry
	// pins is what vet remembers of the definitions (pins.go).
	pins pinState

	mu sync.Mutex
	st PluginStatus
	// loaded is the plugin file as it was when last launched: a directory
	// event that leaves it so (a late event of the same copy) reloads nothing.
	loaded os.FileInfo
	// onSettle holds the callbacks of file changes not yet acted on; they
	// are called once the plugin is published again, or failed, or gone.
	onSettle []func()
	// warnedExposures is what was last logged of who else may change the
	// plugin file (warnExposures).
	warnedExposures string
	// warnedDenied is what was last logged as asked for and not granted.
	warnedDenied *pluginproto.Requests
	// listed is what the plugin offers as last listed, before vet held
	// anything back (Manager.Definitions); nil when unknown.
	listed []trust.Definition
	// lastFailure is the failureKey of the failure last logged whole;
	// "" since the plugin last loaded (reportFailure).
	lastFailure string
}

func newSupervisor(ctx context.Context, m *Manager, f file) *supervisor {
	ctx, cancel := context.WithCancel(ctx)
	s := &supervisor{
		g:       newGate(f.name, m.opts.StartTimeoutOf(f.name)+m.opts.StopTimeout),
		m:       m,
		name:    f.name,
		path:    f.path,
		log:     m.log.With("plugin", f.name),
		ctx:     ctx,
		cancel:  cancel,
		changed: make(chan struct{}, 1),
		recheck: make(chan struct{}, 1),
		done:    make(chan struct{}),
		st:      PluginStatus{Name: f.name, Path: f.path, State: StateLoading, Renamed: f.renamed},
	}
	s.conf.Store(m.opts.launchConf(f.name))
	return s
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
	st := s.st
	s.mu.Unlock()
	if st.State == StateRunning && st.storage != nil {
		st.Storage = st.storage() // may wait for a first measure: not under s.mu
	}
	if st.State == StateRunning && st.stderr != nil {
		st.Stderr = st.stderr()
	}
	return st
}

func (s *supervisor) update(f func(st *PluginStatus)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.st)
}

// fromCache makes the plugin's cache entry e its published provider,
// before it runs, and returns it for the caller to publish.
func (s *supervisor) fromCache(e *cacheEntry) *provider {
	p := &provider{name: s.name, g: s.g, desc: e.description(), lists: s.screen(e.lists()), passClaims: s.m.opts.PassClaims}
	p.lists, p.held = s.vet(p.lists)
	s.cached, s.stored = p, e
	s.showRequests(s.requestsOf("", p.desc, true))
	s.update(func(st *PluginStatus) {
		st.Version, st.Contract = e.Plugin+" "+e.Version, e.Contract
		st.count(p.lists)
		if s.conf.Load().lazy {
			st.State = StateIdle
		}
	})
	s.log.Debug("plugin published from the catalog cache", counts(p.lists)...)
	return p
}

// running records a freshly published instance.
func (s *supervisor) running(in *instance, clearErr bool) {
	s.update(func(st *PluginStatus) {
		st.State = StateRunning
		st.PID = in.pid()
		st.Sandbox, st.storage = nil, nil
		st.stderr = in.out.excerpt.recent
		if r := in.getRunner(); r != nil {
			st.Sandbox, st.storage = r.Layers(), r.Storage()
		}
		st.Version, st.Contract = in.desc.Name+" "+in.desc.Version, in.desc.ContractVersion
		st.count(in.lists)
		if clearErr {
			st.setError(nil, "")
		}
	})
	s.showRequests(s.requestsOf("", in.desc, true))
}

// markLoaded records the plugin file as it is now as the one launched
// (unchanged compares a directory event with it).
func (s *supervisor) markLoaded() {
	if fi, err := os.Stat(s.path); err == nil {
		s.mu.Lock()
		s.loaded = fi
		s.mu.Unlock()
	}
}

// launch starts the plugin's process, retrying a few times while its file
// is still open for writing (ETXTBSY: a copy that has written its last
// byte but not yet closed the file, which brings no further directory
// event). Its trust is checked before (life.launch).
//
// exe, when not nil, is the plugin file opened and hashed, which the
// process executes rather than its path (see pluginFile).
func (s *supervisor) launch(ctx context.Context, exe *os.File) (*instance, error) {
	delay := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		in, err := launch(ctx, &s.m.opts, s.name, s.path, exe)
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

// remote reports whether the plugin is a declared remote MCP server (its
// declaration read afresh: it may have changed).
func (s *supervisor) remote() bool {
	if _, ok := declared.Name(filepath.Base(s.path)); !ok || len(s.m.opts.Wrapper) == 0 {
		return false
	}
	d, err := declared.Load(s.path)
	return err == nil && d.Remote()
}

// event tells Options.OnEvent of e, when it is set.
func (s *supervisor) event(e Event) {
	if f := s.m.opts.OnEvent; f != nil {
		f(s.name, e)
	}
}
