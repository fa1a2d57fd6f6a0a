package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/access"
	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/hooks"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/sealed"
	"github.com/plughost/plughost/host/preflight"
	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/telemetry"
	"github.com/plughost/plughost/host/toolsearch"
	"github.com/plughost/plughost/internal/rundir"
	"github.com/plughost/plughost/internal/tlsreload"
)

// Host is a catalog fed by a plugin manager: the part of plughost every
// command shares. Start makes one; Stop stops it.
type Host struct {
	log       hclog.Logger
	version   string // plughost's (Options.Version)
	pluginDir string
	run       *rundir.Dir // the plugins' sockets and tmp directories; removed by Stop
	catalog   *catalog.Catalog
	manager   *manager.Manager
	done      chan error // receives manager.Run's result
	cancel    context.CancelFunc
	devStop   func()   // stops the device bridge; nil when it is off
	sampler   *sampler // answers the devices' text tasks (device.go); nil when the bridge is off
	// sealer and stateTTL seal the stateless revision's requestState
	// (config's stateless block; nil when not serving).
	sealer   *sealed.Sealer
	stateTTL time.Duration
	// tasks runs MCP's tasks extension (config's tasks block; nil when
	// not serving); escalateAfter is its escalate_after.
	tasks         *tasks.Service
	escalateAfter time.Duration
	// search is tool search mode (config's search block, or
	// --tool-search), its index following the catalog until unfollow;
	// nil when off.
	search   *mcp.ToolSearch
	unfollow func()
	// searchPath is the search block's path under serve --http: tool
	// search mode is served there, and the server at /mcp serves every
	// tool; "" when the mode is the whole server's (or off).
	searchPath string
	// searchReady is closed once the plugins found at start have loaded
	// and the index holds their tools: what a client waits for in tool
	// search mode (nil when off).
	searchReady chan struct{}

	// runEnded is closed when manager.Run has returned, with its result in
	// runErr: while serving, that means the plugin directory could not be
	// read or watched (see ready).
	runEnded chan struct{}
	runErr   error

	// obs are the metrics and the audit log (observe.go).
	obs *observer
	// limits is the config's limits block: the MCP server's and the HTTP
	// transport's (the manager got its own at start).
	limits config.Limits
	// trust is the config's trust block (the manager got its Checker).
	trust config.Trust
	// certs serve the listeners' TLS certificate (tls.go); nil without
	// --tls-cert.
	certs *tlsreload.Reloader
	// rate is the per-caller rate limits (ratelimit.go); nil when not
	// serving.
	rate *rateLimits
	// access is the config's access rules; nil when it has none. A
	// reload replaces them (reload.go).
	access atomic.Pointer[access.Rules]
	// reloads is what a configuration reload needs (reload.go).
	reloads reloadState
	// telemetry exports traces over OTLP; nil when off.
	telemetry *telemetry.Telemetry
	// plugins is what a reload changes of the plugins' side
	// (reload_plugins.go).
	plugins pluginReload
}

// Start assembles a host from o and starts loading plugins in the
// background, logging to stderr; Stop stops it. Its steps, in the order
// of the package doc: the logger; the plugin directory and the
// workspace; the configuration; the services that must open before any
// plugin runs (openServices); the run directory; the manager's options
// (managerOptions); tool search mode's index; the catalog and the
// manager, run in the background (Host.run); the device bridge. A step
// that fails undoes the ones before it.
func Start(o *Options, stderr io.Writer) (*Host, error) {
	log, err := newLogger(o.LogLevel, stderr)
	if err != nil {
		return nil, err
	}
	pluginDir, err := ResolveDir(o.Plugins, "plugins", "--plugins")
	if err != nil {
		return nil, err
	}
	workspace, err := prepareWorkspace(o.Workspace, log)
	if err != nil {
		return nil, err
	}
	cfg, err := readConfig(o, log)
	if err != nil {
		return nil, err
	}
	var undo undoList
	started := false
	defer func() {
		if !started {
			undo.run()
		}
	}()
	svc, err := openServices(o, cfg, log, &undo)
	if err != nil {
		return nil, err
	}
	run, err := OpenRunDir(log)
	if err != nil {
		return nil, err
	}
	undo.add(func() { _ = run.Remove() })
	// ctx ends when the host stops: the manager's run, and a first
	// start's package install (which it cancels).
	ctx, cancel := context.WithCancel(context.Background())
	undo.add(cancel)
	live := newLiveConfig(cfg)
	mopts, held, liveTrust, err := managerOptions(ctx, o, live, pluginDir, workspace, run.Path(), svc.obs, log)
	if err != nil {
		return nil, err
	}
	search, index, err := searchMode(o, cfg, log)
	if err != nil {
		return nil, err
	}
	if index != nil {
		undo.add(func() { index.Close() })
	}
	asker := &lateAsker{}
	chain, err := hookChain(cfg, asker, svc.obs, log.Named("hooks"))
	if err != nil {
		return nil, err
	}
	warnAbsentHooks(cfg, pluginDir, log.Named("hooks"))
	copts := &catalog.Options{Logger: log.Named("catalog"), MaxDeviceItems: cfg.Limits.Items}
	// A serving host's hooks are a Swap, which a reload may fill.
	var hookSwap *hooks.Swap
	switch {
	case o.Serving:
		hookSwap = hooks.NewSwap(chain)
		copts.Hooks, mopts.Hooks = hookSwap, hookSwap
	case chain != nil: // a nil *Chain in the interface would be asked
		copts.Hooks, mopts.Hooks = chain, chain
	}
	cat := catalog.New(copts)
	for _, w := range cfg.Access.Warnings() {
		log.Warn("access rule: " + w)
	}
	undo.add(cat.Close)
	mopts.Publisher = cat
	mgr, err := manager.New(mopts)
	if err != nil {
		return nil, err
	}
	svc.obs.plugins = mgr.Status
	asker.set(mgr)
	h := &Host{obs: svc.obs, log: log, version: o.Version, pluginDir: pluginDir, run: run, catalog: cat, manager: mgr, done: make(chan error, 1),
		cancel: cancel, runEnded: make(chan struct{}), sealer: svc.sealer, stateTTL: cfg.Stateless.StateTTL, tasks: svc.tasks,
		escalateAfter: escalateAfter(cfg.Tasks), limits: cfg.Limits, trust: cfg.Trust, certs: svc.certs, rate: svc.rate,
		telemetry: svc.telemetry, plugins: pluginReload{live: live, trust: liveTrust, hooks: hookSwap, asker: asker}}
	h.access.Store(cfg.Access)
	h.reloads.init(o, cfg, svc.getenv)
	if svc.obs.metrics != nil {
		cfg.Access.OnRefuse(svc.obs.metrics.AccessRefused)
	}
	if index != nil {
		h.follow(ctx, index, search)
	}
	h.runManager(ctx, cfg, held)
	started = true // from here on, Stop undoes everything
	if err := h.startDevices(o.Devices); err != nil {
		h.Stop()
		return nil, err
	}
	log.Debug("loading plugins", "dir", pluginDir, "workspace", workspace)
	return h, nil
}

// newLogger is the host's logger, at level, to stderr.
func newLogger(level string, stderr io.Writer) (hclog.Logger, error) {
	l := hclog.LevelFromString(level)
	if l == hclog.NoLevel {
		return nil, fmt.Errorf("unknown log level %q (want trace, debug, info, warn or error)", level)
	}
	return hclog.New(&hclog.LoggerOptions{Name: "plughost", Level: l, Output: stderr}), nil
}

// readConfig loads the configuration o names, saying which file it read
// when it was not on the command line, and that the auth block does not
// apply over stdio.
func readConfig(o *Options, log hclog.Logger) (*config.Config, error) {
	cfg, err := LoadConfig(o.Config)
	if err != nil {
		return nil, err
	}
	if path, from := config.Locate(o.Config, os.Getenv); from == config.FromEnv || from == config.FromDefault {
		log.Info("configuration", "file", path, "from", from) // not on the command line: say which
	}
	if cfg.Auth != nil && !o.HTTP {
		log.Info("the auth block applies to serve --http; over stdio the caller is the user running plughost")
	}
	return cfg, nil
}

// services are what a host opens before any plugin runs, so that a bad
// audit file, certificate pair, state key or an unreachable redis stops
// the start: the observer, the TLS certificates (nil without --tls-cert),
// and, when serving, the sealer of requestState and the tasks service.
type services struct {
	obs    *observer
	certs  *tlsreload.Reloader
	sealer *sealed.Sealer
	tasks  *tasks.Service
	// getenv reads the environment as it was before the secrets left it,
	// for a reload's checks (reload.go), which read them as check does.
	getenv func(string) string
	rate   *rateLimits // per-caller rate limits (ratelimit.go)
	// telemetry exports traces over OTLP (telemetry.go); nil when off.
	telemetry *telemetry.Telemetry
}

// openServices opens the services (each added to undo), then removes the
// secrets read from the environment: a plugin run without the sandbox
// (disabled, or on a system without one) inherits the host's environment,
// and the state key would let it forge another provider's requestState,
// the redis password read or rewrite any task.
func openServices(o *Options, cfg *config.Config, log hclog.Logger, undo *undoList) (*services, error) {
	// The console's calls page reads the metrics: a stdio host with
	// --console-listen keeps them too.
	obs, err := newObserver(o.Observe, cfg.Audit, o.HTTP || o.ConsoleListen != "", log)
	if err != nil {
		return nil, err
	}
	undo.add(obs.close)
	svc := &services{obs: obs}
	if svc.certs, err = startTLS(o.TLS, log.Named("tls")); err != nil {
		return nil, err
	}
	if svc.certs != nil {
		undo.add(func() { svc.certs.Close() })
	}
	if o.Serving {
		var stateKey []byte // seals requestState, and the task records in redis
		if svc.sealer, stateKey, err = stateSealer(cfg.Stateless, os.Getenv, log.Named("mcp")); err != nil {
			return nil, err
		}
		if svc.tasks, err = taskService(cfg.Tasks, stateKey, os.Getenv, log.Named("tasks")); err != nil {
			return nil, err
		}
		undo.add(func() { svc.tasks.Close() })
		if svc.rate, err = openRateLimits(cfg, obs, os.Getenv, log.Named("ratelimit")); err != nil {
			return nil, err
		}
		undo.add(svc.rate.close)
		if svc.telemetry, err = startTelemetry(o, cfg, log.Named("telemetry")); err != nil {
			return nil, err
		}
		undo.add(func() { stopTelemetry(svc.telemetry, log) })
	}
	// taskService, which reads the password, must be called before this.
	svc.getenv = keptEnv(secretVars)
	for _, name := range secretVars {
		os.Unsetenv(name)
	}
	return svc, nil
}

// searchMode is tool search mode's block and index when it is on (the
// configuration's search block, or --tool-search as an empty one), only
// when serving; nils when off. Over stdio, a block with a path (which
// names a path of serve --http) leaves it off.
func searchMode(o *Options, cfg *config.Config, log hclog.Logger) (*config.Search, *toolsearch.Index, error) {
	search := cfg.Search
	if search == nil && o.ToolSearch {
		search = &config.Search{} // --tool-search: as an empty block
	}
	if o.Serving && search != nil && search.Path != "" && !o.HTTP {
		log.Info("the search block's path names a path of serve --http: over stdio every tool is served", "path", search.Path)
		search = nil
	}
	if !o.Serving || search == nil {
		return nil, nil, nil
	}
	index, err := searchIndex(search, log.Named("mcp"))
	if err != nil {
		return nil, nil, err
	}
	return search, index, nil
}

// follow puts the catalog in tool search mode: index follows its tools,
// and searchReady closes once the plugins found at start have loaded and
// the index holds their tools (or the host stops).
func (h *Host) follow(ctx context.Context, index *toolsearch.Index, search *config.Search) {
	h.search, h.unfollow = followSearch(h.catalog, index, search, h.log.Named("mcp"))
	h.searchPath = search.Path
	h.searchReady = make(chan struct{})
	go func() {
		select {
		case <-h.manager.Ready():
			h.catalog.AwaitFollowers(ctx) // nil, or ctx's error when stopping: either way, done waiting
		case <-ctx.Done():
		}
		close(h.searchReady)
	}()
}

// runManager runs the manager until ctx ends, and once the directory's
// plugins are known (by the manager's own scan) warns of the
// configuration's blocks that name none of them and removes the held
// files (in held; "" for none) of the plugins that hold nothing.
func (h *Host) runManager(ctx context.Context, cfg *config.Config, held string) {
	go func() {
		err := h.manager.Run(ctx)
		h.runErr = err
		close(h.runEnded)
		h.done <- err
	}()
	go func() {
		select {
		case <-h.manager.Ready():
			known := map[string]bool{}
			for _, st := range h.manager.Status() {
				known[st.Name] = true
			}
			warnUnknownPlugins(cfg, known, h.pluginDir, h.log.Named("config"))
			if held != "" {
				removeStaleHeld(held, h.manager.Status(), h.log.Named("trust"))
			}
		case <-ctx.Done():
		}
	}()
}

// secretVars are the variables that leave the environment once the
// services are open (openServices says why).
var secretVars = []string{preflight.EnvStateKey, preflight.EnvStateKeyFile, preflight.EnvRedisPassword, preflight.EnvRedisPasswordFile, "PLUGHOST_TOKEN"}

// undoList is what a failed Start closes, the last opened first.
type undoList []func()

func (u *undoList) add(f func()) { *u = append(*u, f) }

func (u undoList) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// ready says whether the host is ready to serve calls (serve --http's
// GET /readyz): nil once every plugin found at start has loaded or failed
// (a plugin that failed is the operator's to see in the log and in
// `plughost plugins`; the others serve) and, in tool search mode, the
// index holds their tools; else why not, in one line.
func (h *Host) ready() error {
	select {
	case <-h.runEnded: // manager.Ready is closed too, but nothing is served
		if h.runErr != nil {
			return fmt.Errorf("the plugin manager stopped: %v", h.runErr)
		}
		return errors.New("the plugin manager stopped")
	default:
	}
	select {
	case <-h.manager.Ready():
	default:
		return errors.New("the plugins found at start are still loading")
	}
	if h.searchReady != nil {
		select {
		case <-h.searchReady:
		default: // requests would wait for it (mcpOptions): so do probes
			return errors.New("the tool search index is still being filled")
		}
	}
	return nil
}

// Stop fails the tasks still running here (their calls end), unloads every
// plugin and waits until their processes are gone.
func (h *Host) Stop() error {
	if h.devStop != nil {
		h.devStop()
	}
	if h.tasks != nil {
		if err := h.tasks.Close(); err != nil {
			h.log.Warn("closing the tasks", "error", err)
		}
	}
	h.cancel()
	err := <-h.done
	if h.unfollow != nil {
		h.unfollow()
	}
	h.catalog.Close()
	stopTelemetry(h.telemetry, h.log) // after the calls: their spans are queued
	h.obs.close()
	h.rate.close()
	if h.certs != nil {
		h.certs.Close()
	}
	if rerr := h.run.Remove(); rerr != nil { // every plugin is reaped: nothing runs in it
		h.log.Warn("could not remove the run directory", "dir", h.run.Path(), "error", rerr)
	}
	return err
}

// Catalog is the host's catalog: what its plugins (and devices) offer.
func (h *Host) Catalog() *catalog.Catalog { return h.catalog }

// Manager is the host's plugin manager.
func (h *Host) Manager() *manager.Manager { return h.manager }

// PluginDir is the plugin directory, resolved.
func (h *Host) PluginDir() string { return h.pluginDir }
