package main

import (
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/host/trust"
)

// upgradeCommand is `plughost upgrade NAME`: the declared server NAME,
// a package runner's one-liner, gets the newest version its declaration
// allows (its version or range), installed beside the one it runs; the
// command shows the old and new versions and how the definitions differ
// (the approved ones in trust mode pinned, else those the old version
// lists), and switches to it. In mode pinned the new tree is not
// approved: the server is quarantined until plughost approve NAME. A
// server plughost install installed from a registry entry (a package, a
// remote, a bundle) gets the registry's latest version instead
// (upgradeFromRegistry); a bundle installed from a file is refused,
// saying how to install the new file over it (bundleFromFile).
func upgradeCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("upgrade", flag.ContinueOnError)
	plugins := fs.String("plugins", "", "plugin directory (default $XDG_DATA_HOME/plughost/plugins)")
	cfgPath := fs.String("config", "", "HCL configuration file: the server's sandbox block, the trust block, install_timeout")
	registryFlag := fs.String("registry", "", "for a server plughost install installed: the registry to ask for its latest version (default: the one it was installed from)")
	name, err := parseWithArg(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	if name == "" {
		return usageError(stderr, fs, "which server? usage: plughost upgrade NAME")
	}
	o := &serve.Options{Plugins: *plugins, Config: *cfgPath, LogLevel: "warn", Version: version}
	d := installedDeclaration(*plugins, name)
	switch {
	case d != nil && d.Origin != nil && d.Origin.Registry != "":
		return upgradeFromRegistry(o, name, d, *registryFlag, stdout, stderr)
	case d != nil && d.Bundle != "":
		return bundleFromFile(name, d)
	}
	u, err := serve.Upgrade(o, name, stderr)
	if err != nil {
		return err
	}
	plugin, next := u.Plugin, u.Next
	if next.Version == u.Old.Version {
		fmt.Fprintf(stdout, "%s: %s is the newest version %s allows\n", plugin, u.Old, u.Spec)
		return nil
	}
	fmt.Fprintf(stdout, "%s: %s %s → %s\n", plugin, u.Spec.Name, u.Old.Version, next.Version)
	if err := printDefinitionsDiff(stdout, u.Before, u.After, u.From); err != nil {
		return err
	}
	if u.Pinned {
		fmt.Fprintf(stdout, "%s is in trust mode %q: it is held until approved (plughost approve %s --digest %s)\n", plugin, config.TrustPinned, plugin, u.Digest)
	} else {
		fmt.Fprintf(stdout, "%s runs %s from its next start\n", plugin, next)
	}
	return nil
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
