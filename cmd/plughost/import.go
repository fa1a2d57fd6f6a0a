package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/plughost/plughost/host/importer"
)

// importServers is `plughost import FILE`: it reads a desktop host's MCP
// configuration (Claude Desktop's claude_desktop_config.json, Cursor's
// mcp.json, VS Code's .vscode/mcp.json or settings.json) and writes one
// declaration, NAME.mcp.json, per server into the plugin directory
// (package importer has the rules). It prints, per server, what it could
// not carry over and what the operator must decide, then a sandbox block
// with the grants it suggests. Its exit status is 1 when anything was not
// carried over fully or was skipped, so that a script notices.
func importServers(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	dir := fs.String("plugins", "", "plugin directory to write the declarations into (default $XDG_DATA_HOME/plughost/plugins)")
	configOut := fs.String("config-out", "", "write the suggested sandbox block to this file instead of printing it")
	force := fs.Bool("force", false, "overwrite existing declarations (and the --config-out file)")
	dryRun := fs.Bool("dry-run", false, "write nothing: print the declarations and the sandbox block it would write")
	file, err := parseWithArg(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	if file == "" {
		return usageError(stderr, fs, "which file? usage: plughost import [--plugins DIR] [--config-out FILE] [--force] [--dry-run] FILE")
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
		pluginDir = defaultDir("plugins") // not created: a dry run writes nothing
	} else if pluginDir, err = resolveDir(pluginDir, "plugins", "--plugins"); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s, %s\n", file, f.Format, plural(len(f.Servers), "server", "servers"))

	rep := importer.Import(f, &importer.Options{PluginDir: pluginDir, Force: *force, DryRun: *dryRun})
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
	case *configOut == "":
		fmt.Fprint(stdout, snippet)
	case *dryRun:
		fmt.Fprintf(stdout, "would write the sandbox block to %s:\n%s", *configOut, snippet)
	default:
		if err := importer.WriteNew(*configOut, []byte(snippet), 0o644, *force); err != nil {
			fmt.Fprintf(stdout, "sandbox block: NOT WRITTEN: %v\n", err)
			skipped++
		} else {
			fmt.Fprintf(stdout, "wrote the sandbox block to %s: add it to the configuration file (plughost serve --config FILE)\n", *configOut)
		}
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
