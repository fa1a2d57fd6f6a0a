package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/naming"
)

// importServers is `plughost import FILE`: it reads a desktop host's MCP
// configuration (Claude Desktop's claude_desktop_config.json, Cursor's
// mcp.json, VS Code's .vscode/mcp.json or settings.json) and writes one
// declaration, NAME.mcp.json, per server into the plugin directory. It
// prints, per server, what it could not carry over and what the operator
// must decide, then a sandbox block with the grants it suggests. Its exit
// status is 1 when anything was not carried over fully or was skipped, so
// that a script notices.
//
// The format is told by the file's shape, not its name: "mcpServers"
// (Claude Desktop, Cursor, Windsurf), "servers" (VS Code's mcp.json) or
// "mcp": {"servers"} (VS Code's settings.json). Every file is read as
// JSON with comments and trailing commas (JWCC, which VS Code writes), by
// github.com/tailscale/hujson.
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
	format, servers, c, err := readDesktopConfig(src)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	pluginDir := *dir
	if pluginDir == "" && *dryRun {
		pluginDir = defaultDir("plugins") // not created: a dry run writes nothing
	} else if pluginDir, err = resolveDir(pluginDir, "plugins", "--plugins"); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s, %s\n", file, format, plural(len(servers), "server", "servers"))

	var done []imported
	incomplete, skipped := 0, 0
	taken := map[string]string{} // provider name → the source name that has it
	for _, source := range slices.Sorted(maps.Keys(servers)) {
		im := imported{source: source}
		im.name, _ = naming.ForFile(source + ".x") // the whole name, dots included, sanitized
		fmt.Fprintln(stdout)
		if other, dup := taken[im.name]; dup {
			fmt.Fprintf(stdout, "%s: SKIPPED: its provider name %q is %q's already\n", source, im.name, other)
			skipped++
			continue
		}
		taken[im.name] = source
		s, notes, g, err := c.convert(im.name, servers[source])
		if err == nil {
			err = writeDeclaration(filepath.Join(pluginDir, im.name+declared.Suffix), s, *force, *dryRun, &im)
		}
		if err != nil {
			fmt.Fprintf(stdout, "%s: SKIPPED: %v\n", source, err)
			skipped++
			continue
		}
		im.grants = g
		fmt.Fprintf(stdout, "%s: %s\n", source, im.status)
		if im.name != source {
			fmt.Fprintf(stdout, "  renamed: provider name %q (a provider name is 1 to 32 of [a-zA-Z0-9_-])\n", im.name)
		}
		full := true
		for _, n := range notes {
			fmt.Fprintf(stdout, "  %s: %s\n", n.kind, n.text)
			full = full && n.kind != notCarried
		}
		if !full {
			incomplete++
		}
		if *dryRun {
			fmt.Fprintf(stdout, "  %s\n", strings.ReplaceAll(strings.TrimSpace(string(im.content)), "\n", "\n  "))
		}
		done = append(done, im)
	}
	snippet := sandboxSnippet(done)
	fmt.Fprintln(stdout)
	switch {
	case *configOut == "":
		fmt.Fprint(stdout, snippet)
	case *dryRun:
		fmt.Fprintf(stdout, "would write the sandbox block to %s:\n%s", *configOut, snippet)
	default:
		if err := writeNew(*configOut, []byte(snippet), 0o644, *force); err != nil {
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

// imported is one server written (or, in a dry run, to be written).
type imported struct {
	source  string // its name in the desktop host's file
	name    string // its provider name
	status  string // what was done: "wrote FILE"
	content []byte // the declaration
	grants  grants
}

// readDesktopConfig tells the format of a desktop host's file by its shape
// and returns a description of the format, the servers by name and a
// converter knowing the file's VS Code inputs.
func readDesktopConfig(src []byte) (string, map[string]json.RawMessage, *converter, error) {
	std, err := hujson.Standardize(src)
	if err != nil {
		return "", nil, nil, fmt.Errorf("not JSON (comments and trailing commas allowed): %w", err)
	}
	var top struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
		Servers    map[string]json.RawMessage `json:"servers"`
		Inputs     []input                    `json:"inputs"`
		MCP        *struct {
			Servers map[string]json.RawMessage `json:"servers"`
			Inputs  []input                    `json:"inputs"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(std, &top); err != nil {
		return "", nil, nil, fmt.Errorf("not an MCP configuration: %w", err)
	}
	c := &converter{inputs: map[string]input{}, stat: statPath, head: firstLineOf}
	var format string
	var servers map[string]json.RawMessage
	var inputs []input
	switch {
	case top.MCPServers != nil:
		format, servers = `"mcpServers" (Claude Desktop or Cursor)`, top.MCPServers
	case top.Servers != nil:
		format, servers, inputs = `"servers" (VS Code's mcp.json)`, top.Servers, top.Inputs
	case top.MCP != nil && top.MCP.Servers != nil:
		format, servers, inputs = `"mcp": {"servers"} (VS Code's settings.json)`, top.MCP.Servers, top.MCP.Inputs
	default:
		return "", nil, nil, errors.New(`no "mcpServers", "servers" or "mcp": {"servers"} object: not a Claude Desktop, Cursor or VS Code MCP configuration`)
	}
	for _, in := range inputs {
		c.inputs[in.ID] = in
	}
	return format, servers, c, nil
}

// writeDeclaration writes s to path, mode 0600 (env values and headers may
// hold secrets), after checking that it parses as a declaration; not over
// an existing file unless force; nothing in a dry run.
func writeDeclaration(path string, s *declared.Server, force, dryRun bool, im *imported) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	if _, err := declared.Parse(b.Bytes()); err != nil {
		return fmt.Errorf("the declaration would not parse: %v", err)
	}
	im.content = b.Bytes()
	if dryRun {
		im.status = "would write " + path
		if _, err := os.Lstat(path); err == nil && !force {
			return fmt.Errorf("%s exists (--force overwrites it)", path)
		}
		return nil
	}
	if err := writeNew(path, im.content, 0o600, force); err != nil {
		return err
	}
	im.status = "wrote " + path
	return nil
}

// writeNew writes a file whole or not at all, through a temporary file
// renamed (with force) or linked (without: an existing file stays) into
// place, so the host watching the directory never reads half of one.
func writeNew(path string, content []byte, mode fs.FileMode, force bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plughost-import-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return err
	}
	if err := errors.Join(tmp.Chmod(mode), tmp.Close()); err != nil {
		return err
	}
	if force {
		return os.Rename(tmp.Name(), path)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists (--force overwrites it)", path)
	} else if err != nil {
		return err
	}
	return nil
}

// statPath reports whether path exists and is a directory.
func statPath(path string) (isDir, ok bool) {
	st, err := os.Stat(path)
	return err == nil && st.IsDir(), err == nil
}

// firstLineOf returns the first line of a file (at most 256 bytes), ""
// when it cannot be read.
func firstLineOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	return strings.TrimSpace(line)
}
