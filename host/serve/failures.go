package serve

import (
	"cmp"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/diagnose"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/sandbox"
)

// startTimeoutSetting is what sets a plugin's start limit, as its errors
// name it.
const startTimeoutSetting = "start_timeout in the plugins block"

// failureOptions wires what a plugin's failure tells the operator: its
// start limit from the plugins block (named in the error of a start over
// it), the next step (package diagnose, over the plugin's sandbox policy),
// and, for a command that loads and exits (oneShot: plugins, call), where
// the failure last logged is remembered so that the next command does not
// log it whole again. serve remembers nothing across processes: a daemon
// restarted into the same failure logs it whole in its own log, once per
// process.
func failureOptions(o *manager.Options, live *liveConfig, oneShot bool) {
	// Both limits read at each start, so that a reload's apply at the
	// next start; 0 from both is the manager's default.
	o.StartTimeoutFor = func(name string) time.Duration {
		p := live.get().Plugins
		return cmp.Or(p.Plugin[name].StartTimeout, p.StartTimeout)
	}
	o.StartTimeoutSetting = startTimeoutSetting
	o.NextStep = func(name, path, errText, stderr string) string {
		return diagnose.NextStep(failureOf(live.get().Sandbox.PolicyFor(name), name, path, errText, stderr))
	}
	if oneShot {
		o.FailureDir = failureDir()
	}
}

// startTimeoutOf is the plugin name's start limit, as the manager applies
// it (manager.Options.StartTimeoutOf over failureOptions' settings).
func startTimeoutOf(cfg *config.Config, name string) time.Duration {
	var o manager.Options
	failureOptions(&o, newLiveConfig(cfg), false)
	return o.StartTimeoutOf(name)
}

// failureOf is what diagnose needs to know of a failure of the plugin
// name at path under the policy pol.
func failureOf(pol *sandbox.Policy, name, path, errText, stderr string) diagnose.Failure {
	_, isDecl := declared.Name(filepath.Base(path))
	net := string(pol.Net)
	if pol.Disabled {
		net = string(sandbox.NetAll) // no sandbox: the host's network
	}
	var urls []string
	if isDecl {
		if s, err := declared.Load(path); err == nil {
			if s.Remote() && pol.Net == "" {
				net = string(sandbox.NetAll) // wrappedLaunch grants it
			}
			urls = declaredURLs(s)
		}
	}
	home, _ := os.UserHomeDir()
	return diagnose.Failure{
		Plugin: name, Declared: isDecl, Error: errText, Stderr: stderr,
		Net: net, NetAllow: pol.NetAllow, URLs: urls,
		Exists: func(p string) bool { _, err := os.Stat(p); return err == nil },
		Home:   home, Own: PlughostDirs(),
	}
}

// PlughostDirs are plughost's own directories: its configuration
// directory ($PLUGHOST_CONFIG's and the default one's), its state, data
// and cache directories. No next step proposes granting one to a plugin.
func PlughostDirs() []string {
	var dirs []string
	if e := os.Getenv(config.EnvConfig); e != "" {
		dirs = append(dirs, filepath.Dir(e))
	}
	if p := config.DefaultPath(nil); p != "" {
		dirs = append(dirs, filepath.Dir(p))
	}
	if s, err := StateDir(); err == nil {
		dirs = append(dirs, s)
	}
	if d := DefaultDir(""); d != "" {
		dirs = append(dirs, d)
	}
	if d := failureDir(); d != "" {
		dirs = append(dirs, filepath.Dir(d))
	}
	return dirs
}

// urlIn finds a URL in an argument or a value ("--api=https://h:8443/v1").
var urlIn = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>,]+`)

// declaredURLs are the URLs a declared server is given, in its arguments
// and env values (in the order of its args, then of its env's names): the
// ports a failure to reach their hosts names.
func declaredURLs(s *declared.Server) []string {
	var urls []string
	for _, a := range s.Args {
		urls = append(urls, urlIn.FindAllString(a, -1)...)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		urls = append(urls, urlIn.FindAllString(s.Env[k], -1)...)
	}
	return urls
}

// failureDir is $XDG_CACHE_HOME/plughost/failures (default
// ~/.cache/plughost/failures); "" when neither is set.
func failureDir() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "plughost", "failures")
}
