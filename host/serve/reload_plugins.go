package serve

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/expose"
	"github.com/plughost/plughost/host/hooks"
	"github.com/plughost/plughost/host/override"
	"github.com/plughost/plughost/host/trust"
)

// The plugins' side of a configuration reloaded live (issue 35;
// docs/operators.md "What a reload restarts"): the sandbox block, the
// plugins block, the trust block, the hooks block and the override
// blocks, applied to the running manager without a restart of the host.

// pluginReload is what a serving host keeps to reload its plugins'
// configuration: the configuration the manager's options read (live),
// the trust and the hooks the manager and the catalog were given once,
// whose insides a reload replaces, and the asker a new hook chain asks
// through. Zero in a host that does not serve.
type pluginReload struct {
	live  *liveConfig
	trust *liveTrust
	hooks *hooks.Swap
	asker *lateAsker
}

// errNotServing is reloadPlugins' error in a host started to run one
// command (plughost plugins, call): it has nothing to reload.
var errNotServing = errors.New("the plugins' configuration reloads only in a host that serves (plughost serve)")

// reloadPlugins applies next, a configuration already read and checked
// whole (as plughost check checks it), to the plugins of h, which runs
// old. What can fail is built first (the trust block's Checker, which
// reads the trust file; the hook chain), so that an error changes
// nothing. Then, from the next request or launch on:
//
//   - the sandbox block: each plugin whose policy changed restarts
//     (manager.Reconfigure: the new process is published before the old
//     one stops, its calls in flight finish); the others are not touched;
//     an idle lazy plugin runs under the new policy at its next start;
//   - the plugins block: start modes and idle timeouts apply at each
//     plugin's next start, start_timeout and install_timeout at the next
//     start or install, the plugin blocks' tools/prompts/resources lists
//     at once (every listing is shown again);
//   - the trust block: a new Checker replaces the old one, its files
//     watched instead, and every plugin is checked again as a change of
//     the trust file checks it: one the new block holds is quarantined
//     (withdrawn, stopped), one it allows now loads;
//   - the hooks block: the new chain answers every question asked after
//     the swap (one in flight finishes with the old chain), and every
//     plugin's definitions are screened again by the on_definitions hooks;
//     a hook plugin new to the chain is found in the directory as at start
//     (warned of when absent);
//   - the override blocks: applied to every listing, shown again.
//
// What the manager took at start (the limits it holds plugins to, the
// catalog cache, pass_claims, the held files' directory) waits for the
// next start, named in one WARN line.
//
// The reload core calls it once per reload, never two at once (old must
// be the configuration the previous call applied).
func (h *Host) reloadPlugins(old, next *config.Config) error {
	p := &h.plugins
	if p.live == nil {
		return errNotServing
	}
	trustChanged := !reflect.DeepEqual(old.Trust, next.Trust)
	var checker *trust.Checker
	if trustChanged {
		var err error
		if checker, err = newTrust(next, h.log.Named("trust"), h.obs.audit); err != nil {
			return fmt.Errorf("the trust block: %w", err)
		}
	}
	hooksChanged := !slices.EqualFunc(old.Hooks, next.Hooks, func(a, b config.Hook) bool { return reflect.DeepEqual(a, b) })
	var chain *hooks.Chain
	if hooksChanged {
		var err error
		if chain, err = hookChain(next, p.asker, h.obs, h.log.Named("hooks")); err != nil {
			return err
		}
	}
	overridesChanged := !reflect.DeepEqual(old.Overrides, next.Overrides)
	exposeChanged := !sameExposure(old.Plugins.Expose, next.Plugins.Expose)

	p.live.set(next) // from here on, nothing fails
	if hooksChanged {
		p.hooks.Set(chain)
		warnAbsentHooks(next, h.pluginDir, h.log.Named("hooks"))
	}
	if overridesChanged {
		h.manager.SetOverrides(override.New(next.Overrides))
	}
	restarted, _ := h.manager.Reconfigure()
	switch {
	case trustChanged:
		p.trust.swap(checker) // checks every plugin again, which shows its listing again
	case hooksChanged || overridesChanged || exposeChanged:
		h.manager.Recheck()
	}
	h.log.Info("the plugins' configuration reloaded", "restarted", strings.Join(restarted, ", "),
		"trust", trustChanged, "hooks", hooksChanged, "exposure", exposeChanged, "overrides", overridesChanged)
	return nil
}

// sameExposure reports whether a and b, the plugin blocks' exposure lists
// by plugin, are the same patterns.
func sameExposure(a, b map[string]*expose.Rules) bool {
	sameList := func(x, y expose.List) bool { return slices.Equal(x.Allow, y.Allow) && slices.Equal(x.Deny, y.Deny) }
	return maps.EqualFunc(a, b, func(x, y *expose.Rules) bool {
		if x == nil || y == nil {
			return x == y
		}
		return sameList(x.Tools, y.Tools) && sameList(x.Prompts, y.Prompts) && sameList(x.Resources, y.Resources)
	})
}
