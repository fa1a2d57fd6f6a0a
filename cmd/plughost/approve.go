package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/host/trust"
)

// approveCommand is `plughost approve NAME` (approve) and `plughost
// revoke NAME`: the trust file gets, or loses, NAME's approval of the
// plugin file as it is now. A running plughost follows the file.
func approveCommand(approve bool, args []string, stdout, stderr io.Writer) error {
	name := "revoke"
	if approve {
		name = "approve"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	plugins := fs.String("plugins", "", "plugin directory (default $XDG_DATA_HOME/plughost/plugins)")
	cfgPath := fs.String("config", "", "HCL configuration file: its trust block names the trust file (default $XDG_STATE_HOME/plughost/trust.json)")
	want := new(string)
	if approve {
		fs.StringVar(want, "digest", "", "approve only if the file's digest is this one (sha256:…, as plughost plugins shows it): "+
			"what was reviewed is what is approved")
	}
	plugin, err := parseWithArg(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	if plugin == "" {
		return usageError(stderr, fs, "which plugin? usage: plughost %s NAME", name)
	}
	cfg, err := serve.LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	path, err := serve.TrustFile(cfg)
	if err == nil {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return err
	}
	if !approve {
		if err := trust.Revoke(path, plugin); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s in %s; a running plughost stops serving it\n", plugin, path)
		return nil
	}
	a, err := serve.Approve(&serve.Options{Plugins: *plugins, Config: *cfgPath, LogLevel: "warn", Version: version}, cfg, path, plugin, *want, stderr)
	if err != nil {
		return err
	}
	plugin = a.Plugin
	fmt.Fprintf(stdout, "approved %s (%s, %s) in %s\n", plugin, a.File, a.Digest, path)
	if a.Listed {
		fmt.Fprintf(stdout, "pinned %s %s\n", plural(len(a.Pins), "definition", "definitions"), a.From)
		for _, key := range slices.Sorted(maps.Keys(a.Pins)) {
			kind, name, _ := strings.Cut(key, "/")
			fmt.Fprintf(stdout, "  %s %s\n", kind, name)
		}
	} else {
		fmt.Fprintf(stdout, "note: %s listed no definitions (it did not run): only its digest is approved, "+
			"and its first listing is what later ones are held to\n", plugin)
	}
	switch m := cfg.Trust.ModeFor(plugin); m {
	case config.TrustSigned:
		fmt.Fprintf(stdout, "note: %s is in trust mode %q: its signature lets it run, this approval pins its definitions\n", plugin, m)
	case config.TrustOpen:
		fmt.Fprintf(stdout, "note: %s is in trust mode %q, where approvals are not consulted\n", plugin, m)
	}
	return nil
}
