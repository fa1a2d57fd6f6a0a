package main

import (
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
)

// loadConfig reads the --config file; without one, every setting has its
// default.
func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return &config.Config{Sandbox: config.Sandbox{Plugins: nil}}, nil
	}
	return config.Load(path)
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
