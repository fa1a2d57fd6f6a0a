package serve

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/plughost/plughost/host/expose"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/override"
	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/sandbox"
)

// The plugin manager's options: how plugins launch (in the sandbox, a
// declared server through the wrapper), what their failures tell, what
// the trust check decides, the start modes and the catalog cache.

// managerOptions are the manager's options for a host of o over the
// configuration live holds (what its functions read each time they are
// asked, so that a reload applies from then on: reloadPlugins): its
// plugins run from pluginDir, launched in the sandbox with their tmp
// directories in tmpDir (the run directory) until ctx ends. held is the
// directory of the held files a serving host in trust mode pinned or
// signed keeps ("" for none); lt is the trust a reload swaps (nil when
// not serving).
func managerOptions(ctx context.Context, o *Options, live *liveConfig, pluginDir, workspace, tmpDir string, obs *observer,
	log hclog.Logger) (mopts *manager.Options, held string, lt *liveTrust, err error) {
	cfg := live.get() // what cannot change until the next start
	launcher, err := newLauncher(ctx, live, workspace, tmpDir, log.Named("sandbox"), obs.sandboxMissing())
	if err != nil {
		return nil, "", nil, err
	}
	wrapper, err := wrapperArgs()
	if err != nil {
		return nil, "", nil, err
	}
	noLane, err := laneOff(os.Getenv("PLUGHOST_LANE"))
	if err != nil {
		return nil, "", nil, err
	}
	mopts = &manager.Options{
		Wrapper:     wrapper,
		NoLane:      noLane,
		Dir:         pluginDir,
		Logger:      log.Named("plugins"),
		HostVersion: o.Version,
		Launcher:    launcher,
		SocketDir:   tmpDir,
		OnEvent:     obs.managerEvent(),
		Limits: pluginclient.Limits{MaxResultSize: int(cfg.Limits.ResultSize), MaxItems: cfg.Limits.Items,
			MaxDefinitionSize: int(cfg.Limits.DefinitionSize), MaxListSize: int(cfg.Limits.ListSize)},
		MaxInFlight: cfg.Limits.PluginInFlight,
		ExposeFor:   func(name string) *expose.Rules { return live.get().Plugins.Expose[name] },
		Overrides:   override.New(cfg.Overrides),
	}
	failureOptions(mopts, live, !o.Serving)
	if cfg.Auth != nil {
		mopts.PassClaims = cfg.Auth.PassClaims
	}
	checker, err := newTrust(cfg, log.Named("trust"), obs.audit)
	if err != nil {
		return nil, "", nil, err
	}
	switch {
	case o.Serving: // a reload may turn the trust on, off or over
		lt = newLiveTrust(checker, o.Allow, log.Named("trust"))
		mopts.Trust = lt
	case checker != nil: // a nil *Checker in the interface would be called
		mopts.Trust = packageTrust{Trust: checker, allow: o.Allow}
	}
	if o.Serving && checker != nil { // a serving host's held files (pins.go)
		if held, err = heldDir(cfg); err != nil {
			return nil, "", nil, err
		}
	}
	onDef := onDefinition(obs.audit, held, log.Named("trust"))
	mopts.OnDefinition = func(e manager.DefinitionEvent) {
		onDef(e) // the held file first: the console's page reads it at the event
		obs.events.send(definitionEvent(e))
	}
	mopts.Denied = denied(live)
	if o.Serving {
		if err := startModes(mopts, live, workspace, o.Version); err != nil {
			return nil, "", nil, err
		}
	}
	return mopts, held, lt, nil
}

// startModes applies the plugins block: start modes, idle timeouts and
// the catalog cache (default $XDG_CACHE_HOME/plughost/catalog). Plugins
// start lazily (on demand, stopped when idle) unless the file says eager.
//
// The modes and timeouts are read from live at each plugin's start (the
// manager's StartFor), so that a reload's apply from its next start.
func startModes(o *manager.Options, live *liveConfig, workspace, version string) error {
	pc := live.get().Plugins // the cache's: until the next start
	// A desktop user with a few dozen plugins pays memory only for
	// the ones in use: with the catalog cache, every tool is listed
	// without starting any.
	o.Start = manager.StartLazy
	o.StartFor = func(name string) (manager.StartMode, time.Duration) {
		pc := live.get().Plugins
		ps := pc.Plugin[name]
		return manager.StartMode(cmp.Or(ps.Start, pc.Start)), cmp.Or(ps.IdleTimeout, pc.IdleTimeout)
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
	o.Fingerprint = launchFingerprint(live, workspace, o.Env, version)
	return nil
}

// launchFingerprint digests what decides how a plugin is launched: its
// sandbox policy, the files plugin's workspace, the extra environment and
// the host's version (which builds the sandbox). A cache entry is valid
// only for the fingerprint it was written with.
//
// The policy is the one live holds when asked: a reload that changes a
// plugin's policy changes its fingerprint, and the manager restarts the
// plugins whose fingerprint changed (manager.Reconfigure).
func launchFingerprint(live *liveConfig, workspace string, env []string, version string) func(string) string {
	return func(name string) string {
		cfg := live.get()
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

// laneOff reads PLUGHOST_LANE: "off" keeps every plugin's calls on gRPC
// (no frame lane handed at launch); "on" or unset, the default, hands one
// to each plugin, which a plugin of the Go SDK takes.
func laneOff(v string) (bool, error) {
	switch v {
	case "", "on":
		return false, nil
	case "off":
		return true, nil
	}
	return false, fmt.Errorf("PLUGHOST_LANE=%q: want on or off", v)
}
