package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/packages"
	"github.com/plughost/plughost/host/trust"
)

// upgradeCommand is `plughost upgrade NAME`: the declared server NAME,
// a package runner's one-liner, gets the newest version its declaration
// allows (its version or range), installed beside the one it runs; the
// command shows the old and new versions and how the definitions differ
// (the approved ones in trust mode pinned, else those the old version
// lists), and switches to it. In mode pinned the new tree is not
// approved: the server is quarantined until plughost approve NAME.
func upgradeCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("upgrade", flag.ContinueOnError)
	plugins := fs.String("plugins", "", "plugin directory (default $XDG_DATA_HOME/plughost/plugins)")
	cfgPath := fs.String("config", "", "HCL configuration file: the server's sandbox block, the trust block, install_timeout")
	name, err := parseWithArg(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	if name == "" {
		return usageError(stderr, fs, "which server? usage: plughost upgrade NAME")
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	dir, err := resolveDir(*plugins, "plugins", "--plugins")
	if err != nil {
		return err
	}
	plugin, file, err := manager.Find(dir, name)
	if err != nil {
		return err
	}
	spec := packageSpec(file)
	if spec == nil {
		return fmt.Errorf("%s is not a declared npx, bunx, uvx or pipx run server: there is no package to upgrade", file)
	}
	inst, err := commandInstaller(cfg, plugin, stderr)
	if err != nil {
		return err
	}
	pkgDir, err := packagesDir(plugin)
	if err != nil {
		return err
	}
	old, err := packages.Current(pkgDir, spec)
	if err != nil {
		return err
	}
	if old == nil {
		if old, err = inst.Ensure(context.Background(), spec); err != nil {
			return err
		}
	}
	hf := &hostFlags{plugins: dir, config: *cfgPath, logLevel: "warn"}
	before, from, err := definitionsBefore(hf, cfg, plugin, file, stderr)
	if err != nil {
		return err
	}
	next, err := inst.Install(context.Background(), spec, true)
	if err != nil {
		return err
	}
	if next.Version == old.Version {
		fmt.Fprintf(stdout, "%s: %s is the newest version %s allows\n", plugin, old, spec)
		return nil
	}
	if err := inst.Use(next); err != nil {
		return err
	}
	after, ok, err := listOnce(hf, plugin, file, stderr)
	if err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("it listed nothing (see its errors above)")
		}
		if uerr := inst.Use(old); uerr != nil {
			return fmt.Errorf("%s %s did not start: %v; and going back to %s failed: %w", plugin, next, err, old.Version, uerr)
		}
		return fmt.Errorf("%s %s did not start, %s stays: %w", plugin, next, old.Version, err)
	}
	fmt.Fprintf(stdout, "%s: %s %s → %s\n", plugin, spec.Name, old.Version, next.Version)
	if err := printDefinitionsDiff(stdout, before, after, from); err != nil {
		return err
	}
	digest, err := pluginDigest(plugin, file)
	if err != nil {
		return err
	}
	if cfg.Trust.ModeFor(plugin) == config.TrustPinned {
		fmt.Fprintf(stdout, "%s is in trust mode %q: it is held until approved (plughost approve %s --digest %s)\n", plugin, config.TrustPinned, plugin, digest)
	} else {
		fmt.Fprintf(stdout, "%s runs %s from its next start\n", plugin, next)
	}
	return nil
}

// definitionsBefore is what the server offered before the upgrade, to
// compare the new version's with: its approved definitions when it is
// approved with them (the pins a pinned host holds it to), else what it
// lists when started now.
func definitionsBefore(hf *hostFlags, cfg *config.Config, plugin, file string, stderr io.Writer) (map[string]trust.Definition, string, error) {
	if tf, err := trustFile(cfg); err == nil && cfg.Trust.Uses(config.TrustPinned) {
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
func listOnce(hf *hostFlags, plugin, file string, stderr io.Writer) (map[string]trust.Definition, bool, error) {
	digest, err := pluginDigest(plugin, file)
	if err != nil {
		return nil, false, err
	}
	h := *hf
	h.allow = map[string]string{plugin: digest}
	host, err := startHost(&h, stderr)
	if err != nil {
		return nil, false, err
	}
	defer host.stop()
	<-host.manager.Ready()
	defs, ok := host.manager.Definitions(plugin)
	out := map[string]trust.Definition{}
	for _, d := range defs {
		out[d.Key()] = d
	}
	return out, ok, nil
}

// printDefinitionsDiff writes, by key, the definitions added, removed and
// changed (member by member, words removed [-…-] and added {+…+}), from
// the ones before (whose origin from names) to those after.
func printDefinitionsDiff(w io.Writer, before, after map[string]trust.Definition, from string) error {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range before {
			if !yield(k) {
				return
			}
		}
		for k := range after {
			if _, dup := before[k]; !dup && !yield(k) {
				return
			}
		}
	})
	changed := 0
	for _, k := range keys {
		b, inBefore := before[k]
		a, inAfter := after[k]
		switch {
		case !inBefore:
			fmt.Fprintf(w, "  added %s %s\n", a.Kind, a.Name)
		case !inAfter:
			fmt.Fprintf(w, "  removed %s %s\n", b.Kind, b.Name)
		default:
			lines := trust.DiffFields(a.Kind, b.JSON, a.JSON)
			if len(lines) == 0 {
				continue
			}
			fmt.Fprintf(w, "  changed %s %s\n", a.Kind, a.Name)
			for _, l := range lines {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
		changed++
	}
	if changed == 0 {
		_, err := fmt.Fprintf(w, "  definitions unchanged (%s)\n", from)
		return err
	}
	return nil
}
