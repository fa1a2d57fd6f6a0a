package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/expose"
	"github.com/plughost/plughost/host/override"
	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/pluginproto"
)

// Publisher receives the providers of running plugins. *catalog.Catalog
// implements it. The manager calls it from many goroutines, but for any one
// provider name the calls are made in order and never concurrently.
type Publisher interface {
	// Set publishes p, replacing any provider of the same name.
	Set(p tool.Provider)
	// Remove withdraws the provider of that name; unknown names are ignored.
	Remove(name string)
}

// A Holder is a Publisher that can hold back its change events.
// *catalog.Catalog is one. The manager holds it while the plugins of one
// burst of directory changes (or of the first scan) load, each at its own
// pace, so that clients hear of the whole burst once.
type Holder interface {
	// Hold defers change events until release is called.
	Hold() (release func())
}

// Options configure a Manager. A nil *Options, and every zero field, means
// the default documented on the field.
type Options struct {
	// Dir is the plugin directory. Required.
	Dir string
	// Logger receives the manager's logs; each plugin's stderr is forwarded
	// to Logger.Named(<provider name>). Nil discards all logs.
	Logger hclog.Logger
	// Publisher receives each running plugin as a tool.Provider. Nil means
	// plugins run but are published nowhere (useful for listing them).
	Publisher Publisher
	// PassClaims names the claims of a caller's access token that its
	// plugins are told with each call (pluginproto.Caller.Claims); the
	// subject, client id, issuer and scopes always are, the token never.
	PassClaims []string
	// HostVersion is sent to plugins in Describe, for their logs.
	HostVersion string
	// Env is extra environment for every plugin, as "KEY=value" entries.
	// Plugins inherit the host's environment; Env entries override it.
	Env []string
	// StartTimeout bounds a plugin's start: the go-plugin handshake, and
	// then Describe and ListTools. Default 10s.
	StartTimeout time.Duration
	// StartTimeoutFor, when not nil, gives the named plugin's own start
	// limit; 0 keeps StartTimeout.
	StartTimeoutFor func(name string) time.Duration
	// StartTimeoutSetting names what sets the start limit, for the error
	// of a start that exceeds it ("start_timeout in the plugins block"):
	// the operator reads there where to raise it. Empty: not named.
	StartTimeoutSetting string
	// NextStep, when not nil, suggests the one thing the operator can do
	// about a plugin's failure (a grant to add, a variable to set; package
	// diagnose): it gets the plugin's name and file, the error's text and
	// the excerpt of its stderr, and returns "" when it knows none. The
	// step is logged with the failure and shown in PluginStatus.NextStep.
	NextStep func(name, path, errText, stderr string) string
	// Debounce is how long a file must be quiet after a directory event
	// before it is (re)loaded or unloaded. Default 10ms. An ELF file whose
	// headers do not parse yet (still being copied) waits for further writes.
	Debounce time.Duration
	// BackoffInitial is the delay before restarting a plugin that died;
	// it doubles with every further death within CrashWindow. Default 250ms.
	BackoffInitial time.Duration
	// BackoffMax caps the restart delay. Default 30s.
	BackoffMax time.Duration
	// CrashLimit is how many deaths within CrashWindow park a plugin until
	// its file changes. Default 5.
	CrashLimit int
	// CrashWindow is the period over which deaths are counted. Default 1m.
	CrashWindow time.Duration
	// StopTimeout is how long an unloaded plugin gets to finish its calls in
	// flight and exit after being asked to shut down, before its process
	// group is killed. Default 2s.
	StopTimeout time.Duration
	// Launcher, when not nil, turns the prepared command of each plugin into
	// the command actually started (the sandbox's seam). Nil starts the
	// prepared command as is. See Launcher.
	Launcher Launcher

	// Wrapper is the command that serves a declared MCP server as a
	// plugin (plughost's own hidden command): a file NAME.mcp.json in Dir
	// (package declared) is started as Wrapper followed by the
	// declaration's path, and is otherwise a plugin like any other. Nil
	// leaves declarations unloaded (logged at debug level).
	Wrapper []string
	// NoLane keeps every plugin's calls on gRPC: no frame lane is handed
	// to a plugin at launch (PLUGHOST_LANE=off; see internal/lane).
	NoLane bool

	// SocketDir is where go-plugin makes each plugin process's unix socket
	// directory (plugin-dir<random>), removed when the process stops: a
	// host's run directory, so that a host that dies leaves them where the
	// next one sweeps them. Empty: the system tmp.
	SocketDir string

	// FailureDir is where the failure last logged of each plugin is
	// remembered (NAME.failure, a digest of its error), so that another
	// process meeting the same failure of the same file (each plughost
	// command loads the plugins anew) logs it in one line, not whole
	// again; a successful load forgets it. Created if missing. Empty:
	// remembered within this Manager only.
	FailureDir string

	// CacheDir is the catalog cache: one file per plugin holding what it
	// offered when it last ran, so that the next start publishes it before
	// the plugin runs. Created if missing. Empty: no cache.
	CacheDir string
	// Fingerprint, when not nil, returns a digest of the named plugin's
	// launch configuration (its sandbox policy, its environment): a cache
	// entry is valid only for the fingerprint it was written with, the
	// binary's SHA-256 and the contract version. Nil: "".
	Fingerprint func(name string) string
	// Start is when plugins run: StartEager (the default) starts each at
	// once and keeps it up; StartLazy starts one when a request needs it
	// and stops it after IdleTimeout with nothing to do.
	Start StartMode
	// IdleTimeout is how long a lazy plugin runs with no request in
	// flight and no resource subscription held before it is stopped.
	// Default 10m.
	IdleTimeout time.Duration
	// StartFor, when not nil, gives the named plugin's own start mode and
	// idle timeout; an empty mode or a zero timeout keeps Start's or
	// IdleTimeout's.
	StartFor func(name string) (mode StartMode, idle time.Duration)
	// LoadConcurrency bounds how many plugins load (start, Describe, list)
	// at once when they are first loaded or loaded again after their file
	// changed. Default: 4 per CPU, at least 16 (a start waits on its
	// handshake more than it computes).
	LoadConcurrency int
	// OnEvent, when set, learns of each plugin's life events, for
	// metrics: a process started, a death, parking (see Event). It is
	// called on the manager's goroutines and must be quick.
	OnEvent func(plugin string, e Event)
	// Limits bound what the host takes from each plugin: a call's result,
	// and its lists of tools, resources, templates and prompts (see
	// pluginclient.Limits; zero fields mean its defaults). A plugin whose
	// list is over a limit fails to load, its status naming the limit; a
	// call whose result is over MaxResultSize fails with tool.ErrTooLarge.
	Limits pluginclient.Limits
	// ExposeFor, when not nil, returns the operator's allow and deny lists
	// of the named plugin (nil: everything is exposed). What they hide is
	// never published, so it is neither listed nor callable;
	// PluginStatus.Hidden names it.
	ExposeFor func(plugin string) *expose.Rules
	// MaxInFlight bounds the requests (calls, reads, prompts, completions)
	// one plugin process runs at once, from every session together; 0
	// means 256. One more is refused at once with tool.ErrRefused naming
	// the limit, so that one slow plugin cannot make the host hold an
	// unbounded number of requests for it.
	MaxInFlight int
	// Trust, when not nil, decides which plugin files may run (see
	// Trust; *trust.Checker is one): a plugin it refuses is quarantined
	// ([StateQuarantined]): not started, not published, until its file
	// or its trust changes. Nil runs every plugin file (trust mode open).
	Trust Trust
	// OnDefinition, when set, learns of each change of a definition's
	// state (held back, served again, changed in mode open), for the
	// audit log (see "Definitions pinned"). It is called on the plugin's
	// goroutine, after the status shows the change.
	OnDefinition func(DefinitionEvent)
	// Overrides are the operator's override blocks (package override):
	// applied to what is served after the pins and the hooks judged the
	// plugin's text, before the Publisher sees it; each change is shown
	// in PluginStatus.Overridden. Nil overrides nothing.
	Overrides *override.Set
	// Denied, when not nil, returns what of r, the permissions the named
	// plugin asks for, its sandbox policy does not grant (trust.Denied
	// over the plugin's policy). The difference is logged at WARN and
	// shown in PluginStatus.Denied; it is never granted.
	Denied func(name string, r pluginproto.Requests) pluginproto.Requests
	// Hooks are the operator's hooks (host/hooks, from the configuration's
	// hooks block): their on_definitions hooks are asked about each
	// definition a plugin lists before it is published (issue 33). Nil
	// for none.
	Hooks tool.Hooks
}

// Manager runs the plugins of a directory. Create it with New, then call Run.
type Manager struct {
	opts Options // resolved: every default filled in
	log  hclog.Logger
	pub  Publisher

	cache *catalogCache // nil: none
	// overrides are Options.Overrides, or what SetOverrides put instead.
	overrides atomic.Pointer[override.Set]
	failures  failureMemory // Options.FailureDir
	loadSem   chan struct{} // LoadConcurrency tokens

	ready     chan struct{}
	readyOnce sync.Once
	started   atomic.Bool

	mu      sync.Mutex
	plugins map[string]*supervisor // by provider name
	// unloaded holds, by provider name, the done channel of a supervisor
	// removed from plugins, so that a new supervisor of the same name
	// publishes only after the old one has withdrawn.
	unloaded map[string]<-chan struct{}
	// refused holds, by path, the files not loaded because another file
	// has their provider name (StateRefused).
	refused map[string]PluginStatus
}

// DefaultStartTimeout is Options.StartTimeout's default.
const DefaultStartTimeout = 10 * time.Second

// Defaults of Options.
const (
	defaultDebounce       = 10 * time.Millisecond
	defaultBackoffInitial = 250 * time.Millisecond
	defaultBackoffMax     = 30 * time.Second
	defaultCrashLimit     = 5
	defaultCrashWindow    = time.Minute
	defaultStopTimeout    = 2 * time.Second
	defaultIdleTimeout    = 10 * time.Minute
	defaultMaxInFlight    = 256
)

// StartTimeoutOf is the start limit of the plugin name: StartTimeoutFor's
// answer when positive, else StartTimeout, else DefaultStartTimeout. A
// launcher that must know it (a wrapper timing its server's start) asks
// here rather than repeating the rule.
func (o *Options) StartTimeoutOf(name string) time.Duration {
	if o.StartTimeoutFor != nil {
		if d := o.StartTimeoutFor(name); d > 0 {
			return d
		}
	}
	if o.StartTimeout > 0 {
		return o.StartTimeout
	}
	return DefaultStartTimeout
}

// New checks opts and returns a Manager for opts.Dir, which must be an
// existing directory. Nothing starts until Run.
func New(opts *Options) (*Manager, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Dir == "" {
		return nil, errors.New("manager: Options.Dir is required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("manager: plugin directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("manager: plugin directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("manager: plugin directory %s is not a directory", dir)
	}
	o.Dir = dir
	o.Env = slices.Clone(o.Env)
	for _, kv := range o.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(kv, 0) {
			return nil, fmt.Errorf("manager: Options.Env entry %q is not KEY=value", kv)
		}
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"StartTimeout", &o.StartTimeout, DefaultStartTimeout},
		{"Debounce", &o.Debounce, defaultDebounce},
		{"BackoffInitial", &o.BackoffInitial, defaultBackoffInitial},
		{"BackoffMax", &o.BackoffMax, defaultBackoffMax},
		{"CrashWindow", &o.CrashWindow, defaultCrashWindow},
		{"StopTimeout", &o.StopTimeout, defaultStopTimeout},
		{"IdleTimeout", &o.IdleTimeout, defaultIdleTimeout},
	}
	for _, d := range durations {
		switch {
		case *d.v < 0:
			return nil, fmt.Errorf("manager: Options.%s is negative (%v)", d.name, *d.v)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	if o.BackoffMax < o.BackoffInitial {
		return nil, fmt.Errorf("manager: Options.BackoffMax (%v) is less than BackoffInitial (%v)", o.BackoffMax, o.BackoffInitial)
	}
	switch {
	case o.CrashLimit < 0:
		return nil, fmt.Errorf("manager: Options.CrashLimit is negative (%d)", o.CrashLimit)
	case o.CrashLimit == 0:
		o.CrashLimit = defaultCrashLimit
	}
	switch {
	case o.MaxInFlight < 0:
		return nil, fmt.Errorf("manager: Options.MaxInFlight is negative (%d)", o.MaxInFlight)
	case o.MaxInFlight == 0:
		o.MaxInFlight = defaultMaxInFlight
	}
	switch o.Start {
	case "":
		o.Start = StartEager
	case StartEager, StartLazy:
	default:
		return nil, fmt.Errorf("manager: Options.Start is %q, want %q or %q", o.Start, StartEager, StartLazy)
	}
	switch {
	case o.LoadConcurrency < 0:
		return nil, fmt.Errorf("manager: Options.LoadConcurrency is negative (%d)", o.LoadConcurrency)
	case o.LoadConcurrency == 0:
		o.LoadConcurrency = max(16, 4*runtime.NumCPU())
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	var cache *catalogCache
	if o.CacheDir != "" {
		if o.CacheDir, err = filepath.Abs(o.CacheDir); err != nil {
			return nil, fmt.Errorf("manager: cache directory: %w", err)
		}
		cache = &catalogCache{dir: o.CacheDir, log: o.Logger.Named("cache")}
		cache.sweep(time.Now())
	}
	pub := o.Publisher
	if pub == nil {
		pub = discard{}
	}
	m := &Manager{
		opts:     o,
		log:      o.Logger,
		pub:      pub,
		cache:    cache,
		failures: failureMemory{dir: o.FailureDir, log: o.Logger.Named("failures")},
		loadSem:  make(chan struct{}, o.LoadConcurrency),
		ready:    make(chan struct{}),
		plugins:  make(map[string]*supervisor),
		unloaded: make(map[string]<-chan struct{}),
		refused:  make(map[string]PluginStatus),
	}
	m.overrides.Store(o.Overrides)
	return m, nil
}

// discard is the Publisher of a Manager given none.
type discard struct{}

func (discard) Set(tool.Provider) {}
func (discard) Remove(string)     {}

// Ready returns a channel closed once every plugin found when Run started has
// either loaded or failed (or Run has returned).
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// Status returns a snapshot of every plugin in the directory, refused ones
// included, sorted by name and path; after Run has returned, none.
func (m *Manager) Status() []PluginStatus {
	m.mu.Lock()
	sups := make([]*supervisor, 0, len(m.plugins))
	for _, s := range m.plugins {
		sups = append(sups, s)
	}
	out := make([]PluginStatus, 0, len(sups)+len(m.refused))
	for _, st := range m.refused {
		out = append(out, st)
	}
	m.mu.Unlock()
	for _, s := range sups {
		out = append(out, s.snapshot())
	}
	slices.SortFunc(out, func(a, b PluginStatus) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out
}

// Run loads the plugins in Dir in the background and watches Dir until ctx
// ends; then it unloads every plugin, waits for their processes, and returns
// nil. It returns an error only if the directory cannot be read or watched
// at start. Run may be called once.
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("manager: Run called twice")
	}
	var wg sync.WaitGroup // every goroutine Run starts
	defer func() {
		wg.Wait()
		m.closeReady()
		m.mu.Lock()
		clear(m.plugins)
		clear(m.unloaded)
		clear(m.refused)
		m.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	w, err := newDirWatcher(m.opts.Dir)
	if err != nil {
		return fmt.Errorf("manager: watch %s: %w", m.opts.Dir, err)
	}
	defer w.close()

	if t := m.opts.Trust; t != nil { // watching before the first check: no approval is missed
		if done, err := t.Watch(ctx, m.recheckAll); err != nil {
			m.log.Error("cannot watch the trust files: approvals and revocations take effect at the next start", "error", err)
		} else {
			wg.Go(func() { <-done })
		}
	}

	found, err := m.scan()
	if err != nil {
		return fmt.Errorf("manager: read %s: %w", m.opts.Dir, err)
	}
	m.log.Info("loading plugins", "dir", m.opts.Dir, "count", len(found))

	// The catalog cache is read for every plugin before any starts, so
	// that all it knows is published at once.
	type lookedUp struct {
		e  *cacheEntry
		id binaryID
	}
	cached := make([]lookedUp, len(found))
	for i, f := range found {
		cached[i].e, cached[i].id = m.cache.lookup(f.name, f.path, m.opts.fingerprint(f.name))
	}
	first := m.newBurst()
	var fromCache []tool.Provider
	var start []func()
	for i, f := range found {
		p, run := m.spawn(ctx, &wg, f, first.add(), cached[i].e, cached[i].id)
		if p != nil {
			fromCache = append(fromCache, p)
		}
		start = append(start, run)
	}
	// Everything the cache knows is published before any plugin starts,
	// in one go when the publisher can (one rebuild of the catalog).
	m.publishAll(fromCache)
	for _, run := range start {
		run()
	}
	wg.Go(func() {
		first.seal()
		<-first.settled
		m.closeReady()
	})

	m.watch(ctx, &wg, w)
	return nil
}

// burst is the work one burst of directory changes started. It holds the
// publisher (when it is a Holder) until every piece has settled.
type burst struct {
	release func()
	settled chan struct{} // closed when sealed and every piece is done

	mu     sync.Mutex
	left   int
	sealed bool
}

func (m *Manager) newBurst() *burst {
	b := &burst{release: func() {}, settled: make(chan struct{})}
	if h, ok := m.pub.(Holder); ok {
		b.release = h.Hold()
	}
	return b
}

// add counts one more piece of work and returns the func that marks it done
// (safe to call more than once).
func (b *burst) add() func() {
	b.mu.Lock()
	b.left++
	b.mu.Unlock()
	return sync.OnceFunc(func() {
		b.mu.Lock()
		b.left--
		b.endIfDone()
	})
}

// seal says no more work joins the burst.
func (b *burst) seal() {
	b.mu.Lock()
	b.sealed = true
	b.endIfDone()
}

// endIfDone ends the burst once sealed and done. b.mu must be held; it is
// released.
func (b *burst) endIfDone() {
	done := b.sealed && b.left == 0
	if done {
		b.sealed = false // end once
	}
	b.mu.Unlock()
	if done {
		b.release()
		close(b.settled)
	}
}

func (m *Manager) closeReady() { m.readyOnce.Do(func() { close(m.ready) }) }

// spawn starts the supervisor of a plugin file. settled is called once its
// first load has succeeded or failed, or at once when the plugin is
// published from its cache entry e (nil: none; id is the binary's
// identity as the cache lookup found it). When the plugin is to be
// published from e, spawn returns that provider for the caller to
// publish (p), and the supervisor runs only once the caller calls run;
// otherwise it runs at once and run does nothing.
func (m *Manager) spawn(ctx context.Context, wg *sync.WaitGroup, f file, settled func(), e *cacheEntry, id binaryID) (p tool.Provider, run func()) {
	if f.renamed != "" {
		m.log.Info("plugin file name is not a provider name; serving the plugin under a derived one",
			"plugin", f.name, "path", f.path, "reason", f.renamed)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := newSupervisor(ctx, m, f)
	s.bin = id
	if e != nil && m.opts.checking() {
		v, pf := s.checkTrust()
		pf.close()
		if !v.Allowed() {
			e = nil // quarantined: its supervisor says so when it runs
		}
	}
	// With hooks at OnDefinitions, the cache entry is published by the
	// plugin's own goroutine, once they screened it: not here, under m.mu,
	// which a hook plugin's start may need.
	screens := m.opts.Hooks != nil && m.opts.Hooks.Has(tool.OnDefinitions)
	if e != nil && m.unloaded[f.name] == nil && !screens {
		p = s.fromCache(e)
		settled()
	}
	s.prev = m.unloaded[f.name]
	delete(m.unloaded, f.name)
	m.plugins[f.name] = s
	run = func() { wg.Go(func() { s.run(settled) }) }
	if p == nil {
		run()
		run = func() {}
	}
	return p, run
}

// A BatchPublisher is a Publisher that can publish several providers at
// once. *catalog.Catalog is one: the manager publishes everything the
// catalog cache knows at start with one call.
type BatchPublisher interface {
	SetAll(ps ...tool.Provider)
}

// publishAll publishes ps, in one call when the publisher can.
func (m *Manager) publishAll(ps []tool.Provider) {
	if len(ps) == 0 {
		return
	}
	if b, ok := m.pub.(BatchPublisher); ok {
		b.SetAll(ps...)
		return
	}
	for _, p := range ps {
		m.pub.Set(p)
	}
}
