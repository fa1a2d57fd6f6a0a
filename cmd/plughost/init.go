package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/internal/atomicfile"
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
	path := *cfgFlag
	if path == "" {
		path = os.Getenv(config.EnvConfig)
	}
	if path == "" {
		if path = config.DefaultPath(nil); path == "" {
			return errors.New("neither XDG_CONFIG_HOME nor HOME is set: pass --config FILE")
		}
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	exe, err := executable()
	if err != nil {
		return err
	}
	pluginDir, err := resolveDir(*plugins, "plugins", "--plugins")
	if err != nil {
		return err
	}

	_, statErr := os.Stat(path)
	switch {
	case statErr == nil && !*force:
		fmt.Fprintf(stdout, "kept %s: it exists (plughost init --force replaces it)\n", path)
	case statErr != nil && !errors.Is(statErr, iofs.ErrNotExist):
		return statErr
	default:
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := atomicfile.Write(path, []byte(starterConfig)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", path)
	}
	fmt.Fprintf(stdout, "plugin directory: %s (drop plugins here; make install puts the bundled ones here)\n", pluginDir)
	fmt.Fprintf(stdout, "check it: %s check --config %s\n\n", exe, path)

	serveArgs := []string{"serve", "--config", path}
	if *plugins != "" {
		serveArgs = append(serveArgs, "--plugins", pluginDir)
	}
	for _, s := range clientSnippets(exe, serveArgs, path) {
		fmt.Fprintf(stdout, "%s — %s:\n%s\n\n", s.client, s.where, s.text)
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

// snippet is one client's configuration for plughost, as that client's
// own file spells it.
type snippet struct {
	client string // "Claude Desktop"
	where  string // where it goes
	text   string // what goes there: JSON (mcpServers or servers), or a command line
}

// clientSnippets are the configurations of the desktop clients for
// exe with args (serve --config cfg), each in its own format:
//
//   - Claude Desktop, claude_desktop_config.json: "mcpServers", command and args;
//   - Cursor, ~/.cursor/mcp.json: the same shape;
//   - VS Code, .vscode/mcp.json: "servers", with "type": "stdio";
//   - Claude Code: `claude mcp add --scope user plughost -- EXE ARGS`;
//   - the MCP Inspector, whose own --config clashes: PLUGHOST_CONFIG in
//     the server's environment (-e) instead.
func clientSnippets(exe string, args []string, cfg string) []snippet {
	server := stdioServer{Command: exe, Args: args}
	vscode := stdioServer{Type: "stdio", Command: exe, Args: args}
	noConfig := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		if args[i] == "--config" {
			i++
			continue
		}
		noConfig = append(noConfig, args[i])
	}
	compact, _ := json.Marshal(noConfig)
	viaEnv := fmt.Sprintf(`(or, the file named by the environment: "args": %s, "env": {%q: %q})`, compact, config.EnvConfig, cfg)
	return []snippet{
		{"Claude Desktop", "merge into claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/, " +
			"Windows: %APPDATA%\\Claude\\, Linux: ~/.config/Claude/), then restart Claude Desktop",
			indentJSON(map[string]any{"mcpServers": map[string]any{"plughost": server}}) + "\n" + viaEnv},
		{"Cursor", "merge into ~/.cursor/mcp.json (every project) or .cursor/mcp.json (one project)",
			indentJSON(map[string]any{"mcpServers": map[string]any{"plughost": server}}) + "\n" + viaEnv},
		{"VS Code", "merge into .vscode/mcp.json of a workspace (or run \"MCP: Open User Configuration\")",
			indentJSON(map[string]any{"servers": map[string]any{"plughost": vscode}}) + "\n" + viaEnv},
		{"Claude Code", "run once",
			"claude mcp add --scope user plughost -- " + shellJoin(append([]string{exe}, args...)) + "\n" +
				"(or: claude mcp add --scope user -e " + config.EnvConfig + "=" + shellQuote(cfg) + " plughost -- " + shellJoin(append([]string{exe}, noConfig...)) + ")"},
		{"MCP Inspector (its own --config clashes, so the file is named by $" + config.EnvConfig + ")", "run",
			"npx @modelcontextprotocol/inspector -e " + config.EnvConfig + "=" + shellQuote(cfg) + " " +
				shellJoin(append([]string{exe}, noConfig...))},
	}
}

// stdioServer is a client's entry for a server it runs: the fields in
// the order the clients' documentation shows them.
type stdioServer struct {
	Type    string   `json:"type,omitempty"` // VS Code: "stdio"
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

func indentJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return string(b)
}

// shellJoin quotes each word for a POSIX shell where it needs it.
func shellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shellQuote(w)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+%,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// starterConfig is the configuration plughost init writes: valid as it
// is (every plugin gets the default sandbox), with the settings a desktop
// user reaches for first, commented out.
const starterConfig = `# plughost's configuration, written by plughost init.
# Every setting is optional; README "Sandbox", "Trust" and the rest describe the blocks.
# plughost check says whether plughost serve would start with it.

sandbox {
  # What every plugin may reach, besides its own directories; per plugin: plugin "NAME" { ... }.
  # allow_read  = ["/home/me/Documents"]  # paths plugins may read
  # allow_write = []                      # paths plugins may read and write
  # allow_net   = "none"                  # "all", or ["api.example.com:443"]
  # env         = ["LANG"]                # host environment variables passed through
}

plugins {
  # "lazy": a plugin starts when a request needs it, and stops when idle; "eager": all at once.
  start = "lazy"
}

# trust {
#   mode = "pinned"   # only plugin files approved with plughost approve NAME run
# }
`
