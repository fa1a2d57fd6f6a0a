package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/registry"
	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/internal/ask"
)

// installEnv is what an install needs, from its flags: where it writes,
// how it asks, where it prints.
type installEnv struct {
	ctx context.Context
	// pluginDir receives NAME.mcp.json.
	pluginDir string
	// stateDir is plughost's state directory, serve's: secrets/NAME/,
	// bundles/NAME/, packages/NAME/ are under it.
	stateDir string
	// configPath is the configuration serve runs with (--config): the
	// registry block, the trust mode, the bundles' signature roots. ""
	// when there is none.
	configPath string
	// configOut is the file the server's plugin block is added to ("-":
	// printed only).
	configOut string
	// name is the provider name asked for (--name); "" derives one.
	name string
	// force replaces an installed server of the same name; dryRun writes
	// nothing; yes installs without asking to go ahead.
	force, dryRun, yes bool
	// registry is --registry: the MCP Registry's URL, or a file or
	// directory of server.json documents ("": the configuration's
	// registry block, else the official registry); typ is --type: the
	// kind of package or remote to install (npm, pypi, mcpb, remote);
	// oauth is --oauth: a remote server is an OAuth resource server.
	registry, typ string
	oauth         bool
	// ask asks for the values a server needs, once.
	ask *ask.Asker
	// stdin answers the go-ahead question; stdout and stderr print.
	stdin          io.Reader
	stdout, stderr io.Writer
}

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
	e := &installEnv{ctx: ctx, configPath: *cfgPath, name: *name, force: *force, dryRun: *dryRun, yes: *yes,
		registry: *registryFlag, typ: *typ, oauth: *oauth,
		ask: ask.New(stdin, stdout, sets, secretFiles), stdin: stdin, stdout: stdout, stderr: stderr}
	if e.pluginDir, err = serve.ResolveDir(*plugins, "plugins", "--plugins"); err != nil {
		return err
	}
	if e.stateDir = *stateFlag; e.stateDir == "" {
		if e.stateDir, err = serve.StateDir(); err != nil {
			return err
		}
	} else if e.stateDir, err = filepath.Abs(e.stateDir); err != nil {
		return err
	}
	if e.configOut = *configOut; e.configOut == "" {
		if e.configOut = *cfgPath; e.configOut == "" {
			if e.configOut = os.Getenv(config.EnvConfig); e.configOut == "" {
				e.configOut = config.DefaultPath(nil)
			}
		}
		if e.configOut == "" {
			return usageError(stderr, fs, "no configuration file: neither --config, $%s, XDG_CONFIG_HOME nor HOME is set; pass --config-out FILE", config.EnvConfig)
		}
	}
	if strings.HasSuffix(what, ".mcpb") {
		return installBundle(e, what, nil)
	}
	return installFromRegistry(e, what)
}

// providerName is the provider name asked for, else the last part of the
// registry's or the bundle manifest's name ("io.github.acme/notes-mcp"
// and "@acme/notes-mcp" are notes-mcp).
func providerName(asked, serverName string) (string, error) {
	if asked != "" {
		return asked, naming.CheckProvider(asked)
	}
	n, _ := naming.ForFile(serverName[strings.LastIndex(serverName, "/")+1:] + ".x")
	return n, naming.CheckProvider(n)
}

// goAhead asks whether to install what was shown, unless --yes.
func goAhead(e *installEnv) error {
	if e.yes || e.dryRun {
		return nil
	}
	v, err := e.ask.Ask(ask.Question{Key: "install", Description: "go ahead", Required: true, Choices: []string{"yes", "no", "y", "n"}})
	if err != nil {
		return fmt.Errorf("not installed: %w", err)
	}
	if v != "yes" && v != "y" {
		return errors.New("not installed: you said no")
	}
	return nil
}
