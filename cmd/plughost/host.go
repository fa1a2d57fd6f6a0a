package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/access"
	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/expose"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/sealed"
	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/toolsearch"
	"github.com/plughost/plughost/internal/rundir"
	"github.com/plughost/plughost/internal/tlsreload"
	"github.com/plughost/plughost/sandbox"
)

const contractVersion = pluginclient.ContractVersion

// hostFlags are the flags every command that loads plugins shares.
type hostFlags struct {
	plugins   string
	workspace string
	logLevel  string
	config    string       // --config FILE: the HCL configuration (config.go)
	devices   *deviceFlags // serve only: the device bridge (device.go); nil elsewhere
	// toolSearch is serve's --tool-search: tool search mode even without
	// a search block in the configuration.
	toolSearch bool
	// serving is set by serve: the plugins block's start modes and the
	// catalog cache apply. The commands that load and exit (plugins,
	// call) start every plugin eagerly and use no cache.
	serving bool
	// observe are serve's metrics and audit flags (observe.go); nil
	// elsewhere. http is set by serve --http, whose listener serves
	// /metrics.
	observe *observeFlags
	http    bool
	// tls are serve's --tls-cert and --tls-key (tls.go); nil elsewhere.
	tls *tlsFlags
	// allow maps a provider name to the digest it may run with in this
	// host whatever its trust mode: plughost upgrade lists what a new
	// version offers before it is approved (upgrade.go).
	allow map[string]string
}

func (h *hostFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&h.plugins, "plugins", "", "plugin directory (default $XDG_DATA_HOME/plughost/plugins, created if missing)")
	fs.StringVar(&h.workspace, "workspace", "", "directory the files plugin writes into (default $XDG_DATA_HOME/plughost/workspace)")
	fs.StringVar(&h.config, "config", "", "HCL configuration file: sandbox policies, plugin start modes and the catalog cache (see README \"Sandbox\"); "+
		"default $PLUGHOST_CONFIG, else ~/.config/plughost/plughost.hcl when it exists")
	fs.StringVar(&h.logLevel, "log-level", envOr("PLUGHOST_LOG_LEVEL", "info"), "log level: trace, debug, info, warn, error (logs go to stderr)")
}

// host is a catalog fed by a plugin manager: the part of plughost every
// command shares.
type host struct {
	log       hclog.Logger
	pluginDir string
	run       *rundir.Dir // the plugins' sockets and tmp directories; removed by stop
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
	// access is the config's access rules; nil when it has none.
	access *access.Rules
}

// mcpOptions are the options of the MCP server serve runs, over stdio or
// at /mcp: in tool search mode when it is on, unless the search block
// gives it a path of its own (searchOptions).
func (h *host) mcpOptions() *mcp.Options { return h.options(h.searchPath == "") }

// searchOptions are the options of the MCP server serve --http runs at the
// search block's path: tool search mode.
func (h *host) searchOptions() *mcp.Options { return h.options(true) }

// options are the MCP server's options, in tool search mode (when it is
// on) if search.
func (h *host) options(search bool) *mcp.Options {
	ready := h.manager.Ready() // no list from a catalog still loading
	var ts *mcp.ToolSearch
	if search && h.search != nil {
		ready = h.searchReady // nor a search from an index still filling
		ts = h.search
	}
	return &mcp.Options{
		Version: version,
		Logger:  h.log.Named("mcp"),
		Ready:   ready,
		// The stateless revision's requestState, sealed with the key
		// replicas share; the tasks, in the store they share.
		StateSealer:      h.sealer,
		StateTTL:         h.stateTTL,
		Tasks:            h.tasks,
		EscalateAfter:    h.escalateAfter,
		ToolSearch:       ts,
		OnCallEnd:        h.obs.onCallEnd(),
		OnLimit:          h.obs.onLimit(),
		MaxInFlight:      h.limits.InFlight,
		NotificationRate: h.limits.NotificationRate,
		Access:           h.accessFor(),
	}
}

// accessFor is mcp.Options.Access: the guard of each caller, from the
// access block's rules; nil without rules.
func (h *host) accessFor() func(*mcp.Caller) tool.Guard {
	if h.access == nil {
		return nil
	}
	return h.access.For
}

// startHost resolves the directories, then starts loading plugins in the
// background. Stop it with stop.
func startHost(h *hostFlags, stderr io.Writer) (*host, error) {
	level := hclog.LevelFromString(h.logLevel)
	if level == hclog.NoLevel {
		return nil, fmt.Errorf("unknown log level %q (want trace, debug, info, warn or error)", h.logLevel)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "plughost", Level: level, Output: stderr})

	pluginDir, err := resolveDir(h.plugins, "plugins", "--plugins")
	if err != nil {
		return nil, err
	}
	workspace, err := prepareWorkspace(h.workspace, log)
	if err != nil {
		return nil, err
	}

	cfg, err := loadConfig(h.config)
	if err != nil {
		return nil, err
	}
	if path, from := config.Locate(h.config, os.Getenv); from == config.FromEnv || from == config.FromDefault {
		log.Info("configuration", "file", path, "from", from) // not on the command line: say which
	}
	if cfg.Auth != nil && !h.http {
		log.Info("the auth block applies to serve --http; over stdio the caller is the user running plughost")
	}
	obs, err := newObserver(h.observe, cfg.Audit, h.http, log)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			obs.close()
		}
	}()
	certs, err := h.tls.start(log.Named("tls")) // before any plugin runs: a bad pair stops the start
	if err != nil {
		return nil, err
	}
	defer func() {
		if !started && certs != nil {
			certs.Close()
		}
	}()
	var sealer *sealed.Sealer
	var taskSvc *tasks.Service
	if h.serving { // before any plugin runs: a bad key or an unreachable redis stops the start
		if sealer, err = stateSealer(cfg.Stateless, os.Getenv, log.Named("mcp")); err != nil {
			return nil, err
		}
		if taskSvc, err = taskService(cfg.Tasks, os.Getenv, log.Named("tasks")); err != nil {
			return nil, err
		}
	}
	closeTasks := func() {
		if taskSvc != nil {
			taskSvc.Close()
		}
	}
	// The secrets read from the environment leave it before any plugin
	// starts: a plugin run without the sandbox (disabled, or on a system
	// without one) inherits the host's environment, and the state key
	// would let it forge another provider's requestState, the redis
	// password read or rewrite any task. (taskService, which reads the
	// password, must be called before this.)
	for _, name := range []string{envStateKey, envStateKeyFile, envRedisPassword, envRedisPasswordFile, "PLUGHOST_TOKEN"} {
		os.Unsetenv(name)
	}
	run, err := openRunDir(log)
	if err != nil {
		closeTasks()
		return nil, err
	}
	// ctx ends when the host stops: the manager's run, and a first
	// start's package install (which it cancels).
	ctx, cancel := context.WithCancel(context.Background())
	cleanup := func() {
		cancel()
		closeTasks()
		_ = run.Remove()
	}
	launcher, err := newLauncher(ctx, cfg, workspace, run.Path(), log.Named("sandbox"), obs.sandboxMissing())
	if err != nil {
		cleanup()
		return nil, err
	}

	wrapper, err := wrapperArgs()
	if err != nil {
		cleanup()
		return nil, err
	}
	mopts := &manager.Options{
		Wrapper:     wrapper,
		Dir:         pluginDir,
		Logger:      log.Named("plugins"),
		HostVersion: version,
		Launcher:    launcher,
		SocketDir:   run.Path(),
		OnEvent:     obs.managerEvent(),
		Limits: pluginclient.Limits{MaxResultSize: int(cfg.Limits.ResultSize), MaxItems: cfg.Limits.Items,
			MaxDefinitionSize: int(cfg.Limits.DefinitionSize), MaxListSize: int(cfg.Limits.ListSize)},
		MaxInFlight: cfg.Limits.PluginInFlight,
		ExposeFor:   func(name string) *expose.Rules { return cfg.Plugins.Expose[name] },
	}
	failureOptions(mopts, cfg, !h.serving)
	if cfg.Auth != nil {
		mopts.PassClaims = cfg.Auth.PassClaims
	}
	checker, err := newTrust(cfg, log.Named("trust"), obs.audit)
	if err != nil {
		cleanup()
		return nil, err
	}
	if checker != nil { // a nil *Checker in the interface would be called
		mopts.Trust = packageTrust{Trust: checker, allow: h.allow}
	}
	var held string // a serving host's held files (pins.go)
	if h.serving && checker != nil {
		if held, err = heldDir(cfg); err != nil {
			cleanup()
			return nil, err
		}
	}
	mopts.OnDefinition = onDefinition(obs.audit, held, log.Named("trust"))
	mopts.Denied = denied(cfg)
	if h.serving {
		if err := startModes(mopts, cfg, workspace); err != nil {
			cleanup()
			return nil, err
		}
	}
	var index *toolsearch.Index // tool search mode's, when on
	search := cfg.Search
	if search == nil && h.toolSearch {
		search = &config.Search{} // --tool-search: as an empty block
	}
	if h.serving && search != nil && search.Path != "" && !h.http {
		log.Info("the search block's path names a path of serve --http: over stdio every tool is served", "path", search.Path)
		search = nil
	}
	if h.serving && search != nil {
		if index, err = searchIndex(search, log.Named("mcp")); err != nil {
			cleanup()
			return nil, err
		}
	}
	cat := catalog.New(&catalog.Options{Logger: log.Named("catalog")})
	mopts.Publisher = cat
	mgr, err := manager.New(mopts)
	if err != nil {
		cat.Close()
		cleanup()
		if index != nil {
			index.Close()
		}
		return nil, err
	}
	obs.plugins = mgr.Status
	hst := &host{obs: obs, log: log, pluginDir: pluginDir, run: run, catalog: cat, manager: mgr, done: make(chan error, 1), cancel: cancel,
		runEnded: make(chan struct{}), sealer: sealer, stateTTL: cfg.Stateless.StateTTL, tasks: taskSvc, escalateAfter: escalateAfter(cfg.Tasks),
		limits: cfg.Limits, trust: cfg.Trust, certs: certs, access: cfg.Access}
	if obs.metrics != nil {
		cfg.Access.OnRefuse(obs.metrics.AccessRefused)
	}
	if index != nil {
		hst.search, hst.unfollow = followSearch(cat, index, search, log.Named("mcp"))
		hst.searchPath = search.Path
		hst.searchReady = make(chan struct{})
		go func() {
			select {
			case <-mgr.Ready():
				cat.AwaitFollowers(ctx) // nil, or ctx's error when stopping: either way, done waiting
			case <-ctx.Done():
			}
			close(hst.searchReady)
		}()
	}
	go func() {
		err := mgr.Run(ctx)
		hst.runErr = err
		close(hst.runEnded)
		hst.done <- err
	}()
	go func() { // once the directory's plugins are known, by the manager's own scan
		select {
		case <-mgr.Ready():
			known := map[string]bool{}
			for _, st := range mgr.Status() {
				known[st.Name] = true
			}
			warnUnknownPlugins(cfg, known, pluginDir, log.Named("config"))
			if held != "" {
				removeStaleHeld(held, mgr.Status(), log.Named("trust"))
			}
		case <-ctx.Done():
		}
	}()
	if err := hst.startDevices(h.devices); err != nil {
		hst.stop()
		return nil, err
	}
	log.Debug("loading plugins", "dir", pluginDir, "workspace", workspace)
	started = true
	return hst, nil
}

// ready says whether the host is ready to serve calls (serve --http's
// GET /readyz): nil once every plugin found at start has loaded or failed
// (a plugin that failed is the operator's to see in the log and in
// `plughost plugins`; the others serve) and, in tool search mode, the
// index holds their tools; else why not, in one line.
func (h *host) ready() error {
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

// stop fails the tasks still running here (their calls end), unloads every
// plugin and waits until their processes are gone.
func (h *host) stop() error {
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
	h.obs.close()
	if h.certs != nil {
		h.certs.Close()
	}
	if rerr := h.run.Remove(); rerr != nil { // every plugin is reaped: nothing runs in it
		h.log.Warn("could not remove the run directory", "dir", h.run.Path(), "error", rerr)
	}
	return err
}

// startModes applies the plugins block: start modes, idle timeouts and
// the catalog cache (default $XDG_CACHE_HOME/plughost/catalog). Plugins
// start lazily (on demand, stopped when idle) unless the file says eager.
func startModes(o *manager.Options, cfg *config.Config, workspace string) error {
	pc := cfg.Plugins
	o.Start = manager.StartMode(pc.Start)
	if o.Start == "" {
		// A desktop user with a few dozen plugins pays memory only for
		// the ones in use: with the catalog cache, every tool is listed
		// without starting any.
		o.Start = manager.StartLazy
	}
	o.IdleTimeout = pc.IdleTimeout
	if len(pc.Plugin) > 0 {
		o.StartFor = func(name string) (manager.StartMode, time.Duration) {
			ps := pc.Plugin[name]
			return manager.StartMode(ps.Start), ps.IdleTimeout
		}
	}
	switch {
	case pc.CacheOff:
	case pc.CacheDir != "":
		o.CacheDir = pc.CacheDir
	default:
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil // no cache: nowhere to keep it
			}
			base = filepath.Join(home, ".cache")
		}
		o.CacheDir = filepath.Join(base, "plughost", "catalog")
	}
	o.Fingerprint = launchFingerprint(cfg, workspace, o.Env)
	return nil
}

// launchFingerprint digests what decides how a plugin is launched: its
// sandbox policy, the files plugin's workspace, the extra environment and
// the host's version (which builds the sandbox). A cache entry is valid
// only for the fingerprint it was written with.
func launchFingerprint(cfg *config.Config, workspace string, env []string) func(string) string {
	return func(name string) string {
		b, err := json.Marshal(struct {
			Policy    *sandbox.Policy
			Workspace string
			Env       []string
			Host      string
		}{cfg.Sandbox.PolicyFor(name), workspace, env, version})
		if err != nil {
			return "unmarshalable:" + err.Error() // never matches a stored entry's
		}
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	}
}

// DefaultEscalateAfter is how long a call of a tool that supports tasks
// runs for its request before plughost makes it a task, when the tasks
// block does not say: long enough that a quick call is answered at once,
// short enough that a client's request timeout is never near.
const DefaultEscalateAfter = 5 * time.Second

// escalateAfter is the tasks block's escalate_after: its value, 0 for
// "0s" (only when the plugin says so), or the default.
func escalateAfter(t config.Tasks) time.Duration {
	switch {
	case t.EscalateOff:
		return 0
	case t.EscalateAfter > 0:
		return t.EscalateAfter
	}
	return DefaultEscalateAfter
}
