package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/install"
	"github.com/plughost/plughost/host/serve"
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
// (install.UpgradeFromRegistry); a bundle installed from a file is refused,
// saying how to install the new file over it (install.BundleFromFile).
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
	d := install.Installed(*plugins, name)
	switch {
	case d != nil && d.Origin != nil && d.Origin.Registry != "":
		return install.UpgradeFromRegistry(o, name, d, *registryFlag, stdout, stderr)
	case d != nil && d.Bundle != "":
		return install.BundleFromFile(name, d)
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
	if err := install.WriteDefinitionsDiff(stdout, u.Before, u.After, u.From); err != nil {
		return err
	}
	if u.Pinned {
		fmt.Fprintf(stdout, "%s is in trust mode %q: it is held until approved (plughost approve %s --digest %s)\n", plugin, config.TrustPinned, plugin, u.Digest)
	} else {
		fmt.Fprintf(stdout, "%s runs %s from its next start\n", plugin, next)
	}
	return nil
}
