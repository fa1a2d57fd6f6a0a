package main

import (
	"flag"
	"io"

	"github.com/plughost/plughost/host/install"
	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/serve"
)

// uninstallCommand is `plughost uninstall NAME`: a server plughost
// install installed (its declaration has an origin) is removed whole:
// its declaration, its package cache (STATE/packages/NAME), its bundle
// (STATE/bundles/NAME), its secret files (STATE/secrets/NAME), the
// plugin block install added to the configuration file, and its entry
// in the trust file (a later install of the same name is approved
// anew). Its data directory (STATE/plugins/NAME/data) is kept: it is
// the user's.
func uninstallCommand(args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("uninstall", flag.ContinueOnError)
	plugins := flags.String("plugins", "", "plugin directory (default $XDG_DATA_HOME/plughost/plugins)")
	cfgPath := flags.String("config", "", "HCL configuration file: its trust block names the trust file")
	stateFlag := flags.String("state", "", "plughost's state directory (default $XDG_STATE_HOME/plughost)")
	name, err := parseWithArg(flags, args, stdout, stderr)
	if err != nil {
		return err
	}
	if name == "" {
		return usageError(stderr, flags, "which server? usage: plughost uninstall NAME")
	}
	if err := naming.CheckProvider(name); err != nil { // NAME joins paths below: no "..", no "/"
		return usageError(stderr, flags, "%v", err)
	}
	dir, err := serve.ResolveDir(*plugins, "plugins", "--plugins")
	if err != nil {
		return err
	}
	state := *stateFlag
	if state == "" {
		if state, err = serve.StateDir(); err != nil {
			return err
		}
	}
	return install.Uninstall(dir, state, *cfgPath, name, stdout)
}
