package main

import (
	"os"
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/naming"
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
// names no plugin of dir: a typo there would otherwise leave the plugin it
// meant under the default policy (or start mode) without a word. A plugin
// dropped in later is configured all the same; the warning says so.
func warnUnknownPlugins(cfg *config.Config, dir string, log hclog.Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // the manager reports an unreadable directory
	}
	known := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name, _ := naming.ForFile(e.Name())
		known[name] = true
	}
	var names []string
	for name := range cfg.Sandbox.Plugins {
		names = append(names, "sandbox { plugin \""+name+"\" }")
		if known[name] {
			names = names[:len(names)-1]
		}
	}
	for name := range cfg.Plugins.Plugin {
		names = append(names, "plugins { plugin \""+name+"\" }")
		if known[name] {
			names = names[:len(names)-1]
		}
	}
	slices.Sort(names)
	for _, block := range names {
		log.Warn("the config's block names no plugin of the plugin directory (a typo? it applies if such a plugin is added later)",
			"block", block, "dir", dir)
	}
}
