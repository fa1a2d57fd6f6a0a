package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/importer"
	"github.com/plughost/plughost/host/serve"
)

// initCommand is `plughost init`: it writes a starter configuration
// (default ~/.config/plughost/plughost.hcl, where plughost looks when no
// --config is given), creates the default plugin directory, and prints
// what to paste into Claude Desktop, Cursor, VS Code and Claude Code to
// run this very binary with that configuration.
func initCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	cfgFlag := fs.String("config", "", "where to write the configuration (default $"+config.EnvConfig+", else ~/.config/plughost/plughost.hcl)")
	plugins := fs.String("plugins", "", "plugin directory the snippets name (default $XDG_DATA_HOME/plughost/plugins, created if missing)")
	force := fs.Bool("force", false, "replace an existing configuration file")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fs, "unexpected argument %q", fs.Arg(0))
	}
	path, err := config.WritePath(*cfgFlag, nil)
	if err != nil {
		return err
	}
	exe, err := executable()
	if err != nil {
		return err
	}
	pluginDir, err := serve.ResolveDir(*plugins, "plugins", "--plugins")
	if err != nil {
		return err
	}

	wrote, err := config.WriteStarter(path, *force)
	switch {
	case err != nil:
		return err
	case wrote:
		fmt.Fprintf(stdout, "wrote %s\n", path)
	default:
		fmt.Fprintf(stdout, "kept %s: it exists (plughost init --force replaces it)\n", path)
	}
	fmt.Fprintf(stdout, "plugin directory: %s (drop plugins here; make install puts the bundled ones here)\n", pluginDir)
	fmt.Fprintf(stdout, "check it: %s check --config %s\n\n", exe, path)

	serveArgs := []string{"serve", "--config", path}
	if *plugins != "" {
		serveArgs = append(serveArgs, "--plugins", pluginDir)
	}
	for _, s := range importer.ClientSnippets(exe, serveArgs, path) {
		fmt.Fprintf(stdout, "%s — %s:\n%s\n\n", s.Client, s.Where, s.Text)
	}
	return nil
}

// executable is the running plughost's absolute path, symlinks resolved:
// what a client's configuration must name.
func executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the plughost binary's path: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return "", fmt.Errorf("cannot resolve the plughost binary's path: %w", err)
	}
	return exe, nil
}
