package serve

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/packages"
	"github.com/plughost/plughost/host/trust"
)

// Upgrading (plughost upgrade NAME): a declared server's package, to the
// newest version its declaration allows, and what its definitions were
// and are.

// Upgraded is what Upgrade did: the plugin's package Spec went from Old to
// Next (the same version: it was the newest already, and nothing else is
// set); its definitions Before (whose origin From names) and After, by
// key; the digest the new tree is approved with, and whether the plugin
// is in trust mode pinned (held until approved).
type Upgraded struct {
	Plugin        string
	Spec          *packages.Spec
	Old, Next     *packages.Installed
	Before, After map[string]trust.Definition
	From          string
	Digest        string
	Pinned        bool
}

// Upgrade installs the newest version the npx/uvx declaration name of o's
// plugin directory allows, beside the one it runs, and switches to it,
// once it has started and listed its definitions in a host of o (else it
// goes back, and says why). Progress and the hosts' logs go to stderr.
func Upgrade(o *Options, name string, stderr io.Writer) (*Upgraded, error) {
	cfg, dir, plugin, file, err := findDeclared(o, name)
	if err != nil {
		return nil, err
	}
	spec := PackageSpec(file)
	if spec == nil {
		return nil, fmt.Errorf("%s is not a declared npx, bunx, uvx or pipx run server: there is no package to upgrade", file)
	}
	inst, err := CommandInstaller(cfg, plugin, stderr)
	if err != nil {
		return nil, err
	}
	pkgDir, err := PackagesDir(plugin)
	if err != nil {
		return nil, err
	}
	old, err := packages.Current(pkgDir, spec)
	if err != nil {
		return nil, err
	}
	if old == nil {
		if old, err = inst.Ensure(context.Background(), spec); err != nil {
			return nil, err
		}
	}
	hf := *o
	hf.Plugins = dir
	before, from, err := definitionsBefore(&hf, cfg, plugin, file, stderr)
	if err != nil {
		return nil, err
	}
	next, err := inst.Install(context.Background(), spec, true)
	if err != nil {
		return nil, err
	}
	u := &Upgraded{Plugin: plugin, Spec: spec, Old: old, Next: next}
	if next.Version == old.Version {
		return u, nil
	}
	if err := inst.Use(next); err != nil {
		return nil, err
	}
	after, ok, err := listOnce(&hf, plugin, file, stderr)
	if err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("it listed nothing (see its errors above)")
		}
		if uerr := inst.Use(old); uerr != nil {
			return nil, fmt.Errorf("%s %s did not start: %v; and going back to %s failed: %w", plugin, next, err, old.Version, uerr)
		}
		return nil, fmt.Errorf("%s %s did not start, %s stays: %w", plugin, next, old.Version, err)
	}
	if u.Digest, _, err = PluginDigest(plugin, file); err != nil {
		return nil, err
	}
	u.Before, u.After, u.From = before, after, from
	u.Pinned = cfg.Trust.ModeFor(plugin) == config.TrustPinned
	return u, nil
}

// definitionsBefore is what the server offered before the upgrade, to
// compare the new version's with: its approved definitions when it is
// approved with them (the pins a pinned host holds it to), else what it
// lists when started now.
func definitionsBefore(hf *Options, cfg *config.Config, plugin, file string, stderr io.Writer) (map[string]trust.Definition, string, error) {
	if tf, err := TrustFile(cfg); err == nil && cfg.Trust.Uses(config.TrustPinned) {
		if f, err := trust.ReadFile(tf); err == nil {
			if e, ok := f.Plugins[plugin]; ok && e.Definitions != nil {
				out := map[string]trust.Definition{}
				for key, p := range e.Definitions {
					kind, name, _ := strings.Cut(key, "/")
					out[key] = trust.Definition{Kind: kind, Name: name, JSON: p.Definition}
				}
				return out, "approved", nil
			}
		}
	}
	defs, _, err := listOnce(hf, plugin, file, stderr)
	return defs, "listed before", err
}

// listOnce starts the declared server in a host of its own, trusted for
// this run only whatever its trust mode (what it runs is the operator's
// own command's doing), and returns what it lists by key; ok is false
// when it listed nothing.
func listOnce(hf *Options, plugin, file string, stderr io.Writer) (map[string]trust.Definition, bool, error) {
	digest, _, err := PluginDigest(plugin, file)
	if err != nil {
		return nil, false, err
	}
	h := *hf
	h.Allow = map[string]string{plugin: digest}
	host, err := Start(&h, stderr)
	if err != nil {
		return nil, false, err
	}
	defer host.Stop()
	<-host.manager.Ready()
	defs, ok := host.manager.Definitions(plugin)
	out := map[string]trust.Definition{}
	for _, d := range defs {
		out[d.Key()] = d
	}
	return out, ok, nil
}

// findDeclared is what an upgrade of the server name of o's plugin
// directory starts from: the configuration, the directory, the plugin's
// name and its declaration file.
func findDeclared(o *Options, name string) (cfg *config.Config, dir, plugin, file string, err error) {
	if cfg, err = LoadConfig(o.Config); err != nil {
		return nil, "", "", "", err
	}
	if dir, err = ResolveDir(o.Plugins, "plugins", "--plugins"); err != nil {
		return nil, "", "", "", err
	}
	plugin, file, err = manager.Find(dir, name)
	return cfg, dir, plugin, file, err
}
