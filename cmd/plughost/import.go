package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/importer"
	"github.com/plughost/plughost/host/serve"
)

// importServers is `plughost import FILE`: it reads a desktop host's MCP
// configuration (Claude Desktop's claude_desktop_config.json, Cursor's
// mcp.json, VS Code's .vscode/mcp.json or settings.json) and writes one
// declaration, NAME.mcp.json, per server into the plugin directory
// (package importer has the rules), the files it takes out of them
// (secrets, a server's data) under plughost's state directory, and the
// plugin block each server needs into one configuration file, the one
// `plughost serve --config` starts with. It prints, per server, what it
// granted, moved or could not carry over, then the blocks. Its exit status
// is 1 when anything was not carried over fully or was skipped (a block
// kept included), so that a script notices.
func importServers(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	dir := fs.String("plugins", "", "plugin directory to write the declarations into (default $XDG_DATA_HOME/plughost/plugins)")
	configOut := fs.String("config-out", "", "the configuration file to add the servers' plugin blocks to, made when missing (default $"+config.EnvConfig+
		", else $XDG_CONFIG_HOME/plughost/plughost.hcl); - prints them instead")
	force := fs.Bool("force", false, "overwrite existing declarations, and replace the plugin blocks of the same names in the configuration file")
	stateFlag := fs.String("state", "", "plughost's state directory, serve's: secret files go under DIR/secrets, a server's data under DIR/plugins/NAME/data (default $XDG_STATE_HOME/plughost)")
	dryRun := fs.Bool("dry-run", false, "write nothing: print the declarations and the plugin blocks it would write")
	file, err := parseWithArg(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	if file == "" {
		return usageError(stderr, fs, "which file? usage: plughost import [--plugins DIR] [--config-out FILE] [--state DIR] [--force] [--dry-run] FILE")
	}

	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	f, err := importer.Read(src)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	pluginDir := *dir
	if pluginDir == "" && *dryRun {
		pluginDir = serve.DefaultDir("plugins") // not created: a dry run writes nothing
	} else if pluginDir, err = serve.ResolveDir(pluginDir, "plugins", "--plugins"); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s, %s\n", file, f.Format, plural(len(f.Servers), "server", "servers"))

	state := *stateFlag
	if state == "" {
		if state, err = serve.StateDir(); err != nil {
			return err
		}
	} else if state, err = filepath.Abs(state); err != nil {
		return err
	}
	cfgPath := *configOut
	if cfgPath == "" {
		if cfgPath = os.Getenv(config.EnvConfig); cfgPath == "" {
			cfgPath = config.DefaultPath(nil)
		}
		if cfgPath == "" {
			return usageError(stderr, fs, "no configuration file: neither $%s, XDG_CONFIG_HOME nor HOME is set; pass --config-out FILE", config.EnvConfig)
		}
	}
	own := append(serve.PlughostDirs(), filepath.Dir(cfgPath)) // never granted to a server
	rep := importer.Import(f, &importer.Options{PluginDir: pluginDir, Force: *force, DryRun: *dryRun, StateDir: state, Own: own})
	incomplete, skipped := 0, 0
	for _, s := range rep.Servers {
		fmt.Fprintln(stdout)
		if s.Skipped != nil {
			fmt.Fprintf(stdout, "%s: SKIPPED: %v\n", s.Source, s.Skipped)
			skipped++
			continue
		}
		fmt.Fprintf(stdout, "%s: %s\n", s.Source, s.Status)
		if s.Name != s.Source {
			fmt.Fprintf(stdout, "  renamed: provider name %q (a provider name is 1 to 32 of [a-zA-Z0-9_-])\n", s.Name)
		}
		for _, n := range s.Notes {
			fmt.Fprintf(stdout, "  %s: %s\n", n.Kind, n.Text)
		}
		if !s.Full() {
			incomplete++
		}
		if *dryRun {
			fmt.Fprintf(stdout, "  %s\n", strings.ReplaceAll(strings.TrimSpace(string(s.Content)), "\n", "\n  "))
		}
	}
	snippet := importer.Snippet(rep.Servers)
	fmt.Fprintln(stdout)
	switch {
	case cfgPath == "-":
		fmt.Fprint(stdout, snippet)
	case *dryRun:
		fmt.Fprintf(stdout, "would add to %s:\n%s", cfgPath, snippet)
	default:
		fmt.Fprint(stdout, snippet)
		kept, err := importer.WriteConfig(cfgPath, importer.Blocks(rep.Servers), *force)
		if err != nil {
			fmt.Fprintf(stdout, "configuration: NOT WRITTEN: %v\n", err)
			skipped++
			break
		}
		for _, name := range kept {
			fmt.Fprintf(stdout, "%s: KEPT its plugin block for %q as it was, not the one above (--force replaces it)\n", cfgPath, name)
			skipped++
		}
		fmt.Fprintf(stdout, "wrote %s: start with plughost serve --config %s\n", cfgPath, cfgPath)
	}
	var what []string
	if incomplete > 0 {
		what = append(what, plural(incomplete, "server", "servers")+" not carried over fully")
	}
	if skipped > 0 {
		what = append(what, fmt.Sprintf("%d skipped", skipped))
	}
	if len(what) > 0 {
		return errors.New(strings.Join(what, ", ") + " (see above)") // exit status 1
	}
	return nil
}
