package serve

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/audit"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/hooks"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/tool"
)

// The operator's hooks (the configuration's hooks block): one chain
// (host/hooks), asked by the catalog around calls, reads and prompt gets
// and by the plugin manager about definitions, reaching the hook plugins
// through the manager (tool.HookAsker). The manager is made after the
// catalog, which it publishes to, so the chain asks through a lateAsker
// that the manager is given to once it exists.

// hookChain builds cfg's hooks over ask, counting every decision in the
// metrics and writing the others to the audit log (when obs has them).
// Nil when the file has no hook that is on.
func hookChain(cfg *config.Config, ask tool.HookAsker, obs *observer, log hclog.Logger) (*hooks.Chain, error) {
	chain, err := hooks.New(cfg.Hooks, ask, &hooks.Options{Logger: log, Observe: obs.hookDecided})
	if err != nil {
		return nil, fmt.Errorf("the hooks block: %w", err)
	}
	if chain != nil {
		log.Info("hooks", "plugins", chain.Plugins())
	}
	return chain, nil
}

// warnAbsentHooks logs each hook that is on whose plugin is not in the
// plugin directory dir now, as plughost check reports it: serve starts
// (the plugin may come later), but until then its on_error decides
// every request it matches.
func warnAbsentHooks(cfg *config.Config, dir string, log hclog.Logger) {
	for _, h := range cfg.Hooks {
		if h.Mode == config.HookOff {
			continue
		}
		if _, _, err := manager.Find(dir, h.Plugin); errors.Is(err, manager.ErrNoPlugin) {
			log.Warn("a hook names a plugin that is not in the plugin directory: until it is, its on_error decides every request it matches "+
				"(put the plugin there, or correct plugin = in the hook block)", "hook", h.Name, "plugin", h.Plugin, "on_error", h.OnError, "dir", dir)
		}
	}
}

// hookDecided is hooks.Options.Observe: a decision counted, and written
// to the audit log unless it is a pass.
func (o *observer) hookDecided(d *hooks.Decision) {
	if o.metrics != nil {
		o.metrics.HookDecided(d.Hook, string(d.Decision))
	}
	if o.audit == nil || d.Decision == tool.HookPass {
		return
	}
	line := audit.HookDecision{Time: time.Now(), Hook: d.Hook, Point: string(d.Point), Kind: string(d.Item.Kind),
		Item: hooks.ItemName(&d.Item), Provider: d.Item.Provider, Decision: string(d.Decision), Reason: d.Reason}
	if c := d.Caller; c != nil {
		line.Subject, line.ClientID = c.Subject, c.ClientID
	}
	o.audit.Hook(line)
}

// lateAsker is a tool.HookAsker whose asker (the manager) is set after
// the chain is built: the manager needs the chain for its definitions,
// and the chain the manager for its plugins. A question asked before, which
// only a test can make, fails (and its hook's on_error decides).
type lateAsker struct {
	to atomic.Pointer[tool.HookAsker]
}

// errNoAsker is the failure of a question asked when nothing serves hooks.
var errNoAsker = errors.New("the plugin manager is not running yet")

func (l *lateAsker) set(a tool.HookAsker) { l.to.Store(&a) }

func (l *lateAsker) AskHook(ctx context.Context, plugin string, q *tool.HookCall) (*tool.HookAnswer, error) {
	a := l.to.Load()
	if a == nil {
		return nil, errNoAsker
	}
	return (*a).AskHook(ctx, plugin, q)
}
