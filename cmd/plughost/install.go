package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/install"
	"github.com/plughost/plughost/host/registry"
	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/internal/ask"
)

// keyValues is a repeatable KEY=VALUE flag.
type keyValues map[string]string

func (kv keyValues) String() string { return "" }

func (kv keyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", s)
	}
	kv[k] = v
	return nil
}

// installCommand is `plughost install NAME[@VERSION] | FILE.mcpb`: a
// server of an MCP Registry, or an MCP Bundle file, becomes a declared
// server of the plugin directory, sandboxed, with the values it needs
// asked once and its secrets kept in files.
func installCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	plugins := fs.String("plugins", "", "plugin directory (default $XDG_DATA_HOME/plughost/plugins)")
	cfgPath := fs.String("config", "", "HCL configuration file serve runs with: registry block, trust mode, bundle signature roots")
	configOut := fs.String("config-out", "", "the configuration file to add the server's plugin block to (default: --config, else $"+config.EnvConfig+
		", else $XDG_CONFIG_HOME/plughost/plughost.hcl); - prints it instead")
	stateFlag := fs.String("state", "", "plughost's state directory (default $XDG_STATE_HOME/plughost)")
	name := fs.String("name", "", "the provider name to install it as (default: derived from the server's name)")
	force := fs.Bool("force", false, "replace an installed server of the same name")
	dryRun := fs.Bool("dry-run", false, "write nothing: show what would be installed and written")
	yes := fs.Bool("yes", false, "install without asking to go ahead (values are still asked for)")
	registryFlag := fs.String("registry", "", "the MCP Registry: its URL, or a file or directory of server.json documents (default: --config's registry block, else "+registry.DefaultURL+")")
	typ := fs.String("type", "", "what to install when the server offers several: npm, pypi, mcpb or remote (default: the first plughost runs, in the entry's order)")
	oauth := fs.Bool("oauth", false, "a remote server: log in to it with OAuth (plughost login NAME) instead of headers")
	sets, secretFiles := keyValues{}, keyValues{}
	fs.Var(sets, "set", "KEY=VALUE: a value the server asks for (repeatable; never a secret)")
	fs.Var(secretFiles, "secret-file", "KEY=FILE: a secret the server asks for, read from FILE's first line (repeatable)")
	what, err := parseWithArg(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	if what == "" {
		return usageError(stderr, fs, "what? usage: plughost install NAME[@VERSION] | FILE.mcpb")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e := &install.Env{Ctx: ctx, ConfigPath: *cfgPath, Name: *name, Force: *force, DryRun: *dryRun, Yes: *yes,
		Registry: *registryFlag, Type: *typ, OAuth: *oauth,
		Ask: ask.New(stdin, stdout, sets, secretFiles), Stdin: stdin, Stdout: stdout, Stderr: stderr}
	if e.PluginDir, err = serve.ResolveDir(*plugins, "plugins", "--plugins"); err != nil {
		return err
	}
	if e.StateDir = *stateFlag; e.StateDir == "" {
		if e.StateDir, err = serve.StateDir(); err != nil {
			return err
		}
	} else if e.StateDir, err = filepath.Abs(e.StateDir); err != nil {
		return err
	}
	if e.ConfigOut = *configOut; e.ConfigOut == "" {
		if e.ConfigOut = *cfgPath; e.ConfigOut == "" {
			if e.ConfigOut = os.Getenv(config.EnvConfig); e.ConfigOut == "" {
				e.ConfigOut = config.DefaultPath(nil)
			}
		}
		if e.ConfigOut == "" {
			return usageError(stderr, fs, "no configuration file: neither --config, $%s, XDG_CONFIG_HOME nor HOME is set; pass --config-out FILE", config.EnvConfig)
		}
	}
	if strings.HasSuffix(what, ".mcpb") {
		return install.Bundle(e, what, nil)
	}
	return install.FromRegistry(e, what)
}
