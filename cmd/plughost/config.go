package main

import (
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
