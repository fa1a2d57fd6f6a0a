package serve

import (
	"sync/atomic"

	"github.com/plughost/plughost/host/config"
)

// liveConfig is the configuration the plugin manager's options read each
// time they are asked (a launch's sandbox policy, a plugin's start mode,
// start limit and exposure, its fingerprint): a reload (reloadPlugins)
// sets the new one, and what is asked after that answers from it. The
// manager keeps the Options it was given at start; only what they read
// changes.
type liveConfig struct {
	cur atomic.Pointer[config.Config]
}

// newLiveConfig returns a liveConfig holding cfg.
func newLiveConfig(cfg *config.Config) *liveConfig {
	c := &liveConfig{}
	c.cur.Store(cfg)
	return c
}

// get is the configuration now.
func (c *liveConfig) get() *config.Config { return c.cur.Load() }

// set makes cfg the configuration read from now on.
func (c *liveConfig) set(cfg *config.Config) { c.cur.Store(cfg) }
