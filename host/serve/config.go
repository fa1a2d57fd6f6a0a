package serve

import (
	"os"
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/preflight"
)

// LoadConfig reads the configuration file config.Locate finds: the
// --config flag's (path), else $PLUGHOST_CONFIG's, else
// ~/.config/plughost/plughost.hcl when it exists; without one, every
// setting has its default. Every mistake of the file is listed, one to a
// line.
func LoadConfig(path string) (*config.Config, error) {
	if path, _ = config.Locate(path, os.Getenv); path == "" {
		return &config.Config{Sandbox: config.Sandbox{Plugins: nil}}, nil
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, preflight.ConfigError(err)
	}
	return cfg, nil
}

// warnUnknownPlugins logs a warning for each plugin block of cfg that
// names none of the plugins known (by provider name) in dir: a typo there
// would otherwise leave the plugin it meant under the default policy (or
// start mode) without a word. A plugin dropped in later is configured all
// the same; the warning says so.
func warnUnknownPlugins(cfg *config.Config, known map[string]bool, dir string, log hclog.Logger) {
	var blocks []string
	for name := range cfg.Sandbox.Plugins {
		if !known[name] {
			blocks = append(blocks, "sandbox { plugin \""+name+"\" }")
		}
	}
	for name := range cfg.Plugins.Plugin {
		if !known[name] {
			blocks = append(blocks, "plugins { plugin \""+name+"\" }")
		}
	}
	for name := range cfg.Trust.Plugin {
		if !known[name] {
			blocks = append(blocks, "trust { plugin \""+name+"\" }")
		}
	}
	slices.Sort(blocks)
	for _, block := range blocks {
		log.Warn("the config's block names no plugin of the plugin directory (a typo? it applies if such a plugin is added later)",
			"block", block, "dir", dir)
	}
}
