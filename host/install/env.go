// Package install turns a server of an MCP Registry, or an MCP Bundle
// file, into a declared server of the plugin directory: it shows what
// will run, asks once for the values the server needs (internal/ask),
// installs its package or unpacks its bundle, and writes its declaration
// (NAME.mcp.json), its secret files (STATE/secrets/NAME/, mode 0600) and
// the plugin block granting what it needs, or nothing at all. It keeps a
// record of what it wrote (STATE/installed/NAME.json), so Uninstall
// removes just that, and upgrades what it installed to the registry's
// latest version.
//
// The rules of each part live in their packages: host/registry reads
// registries and plans a server.json; host/mcpb opens bundles;
// host/importer writes declarations, secrets and plugin blocks;
// host/packages installs npm and PyPI packages once; host/serve starts
// a server to list its definitions. This package orders them and says
// what it did; `plughost install`, `uninstall` and `upgrade` parse their
// flags into an Env and call it.
package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/internal/ask"
)

// Env is what an install needs, from its command's flags: where it
// writes, how it asks, where it prints.
type Env struct {
	Ctx context.Context
	// pluginDir receives NAME.mcp.json.
	PluginDir string
	// stateDir is plughost's state directory, serve's: secrets/NAME/,
	// bundles/NAME/, packages/NAME/ are under it.
	StateDir string
	// configPath is the configuration serve runs with (--config): the
	// registry block, the trust mode, the bundles' signature roots. ""
	// when there is none.
	ConfigPath string
	// configOut is the file the server's plugin block is added to ("-":
	// printed only).
	ConfigOut string
	// name is the provider name asked for (--name); "" derives one.
	Name string
	// force replaces an installed server of the same name; dryRun writes
	// nothing; yes installs without asking to go ahead.
	Force, DryRun, Yes bool
	// registry is --registry: the MCP Registry's URL, or a file or
	// directory of server.json documents ("": the configuration's
	// registry block, else the official registry); typ is --type: the
	// kind of package or remote to install (npm, pypi, mcpb, remote);
	// oauth is --oauth: a remote server is an OAuth resource server.
	Registry, Type string
	OAuth          bool
	// ask asks for the values a server needs, once.
	Ask *ask.Asker
	// stdin answers the go-ahead question; stdout and stderr print.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
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
func goAhead(e *Env) error {
	if e.Yes || e.DryRun {
		return nil
	}
	v, err := e.Ask.Ask(ask.Question{Key: "install", Description: "go ahead", Required: true, Choices: []string{"yes", "no", "y", "n"}})
	if err != nil {
		return fmt.Errorf("not installed: %w", err)
	}
	if v != "yes" && v != "y" {
		return errors.New("not installed: you said no")
	}
	return nil
}
