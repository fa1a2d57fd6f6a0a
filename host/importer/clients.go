package importer

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/plughost/plughost/host/config"
)

// The other way round: what to paste into a desktop client's
// configuration to run plughost (plughost init prints them).

// ClientSnippet is one client's configuration for plughost, as that
// client's own file spells it.
type ClientSnippet struct {
	Client string // "Claude Desktop"
	Where  string // where it goes
	Text   string // what goes there: JSON (mcpServers or servers), or a command line
}

// ClientSnippets are the configurations of the desktop clients for
// exe with args (serve --config cfg), each in its own format:
//
//   - Claude Desktop, claude_desktop_config.json: "mcpServers", command and args;
//   - Cursor, ~/.cursor/mcp.json: the same shape;
//   - VS Code, .vscode/mcp.json: "servers", with "type": "stdio";
//   - Claude Code: `claude mcp add --scope user plughost -- EXE ARGS`;
//   - the MCP Inspector, whose own --config clashes: PLUGHOST_CONFIG in
//     the server's environment (-e) instead.
func ClientSnippets(exe string, args []string, cfg string) []ClientSnippet {
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
	return []ClientSnippet{
		{"Claude Desktop", "merge into claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/, " +
			"Windows: %APPDATA%\\Claude\\, Linux: ~/.config/Claude/), then restart Claude Desktop",
			indentJSON(map[string]any{"mcpServers": map[string]any{"plughost": server}}) + "\n" + viaEnv},
		{"Cursor", "merge into ~/.cursor/mcp.json (every project) or .cursor/mcp.json (one project)",
			indentJSON(map[string]any{"mcpServers": map[string]any{"plughost": server}}) + "\n" + viaEnv},
		{"VS Code", "merge into .vscode/mcp.json of a workspace (or run \"MCP: Open User Configuration\")",
			indentJSON(map[string]any{"servers": map[string]any{"plughost": vscode}}) + "\n" + viaEnv},
		{"Claude Code", "run once",
			"claude mcp add --scope user plughost -- " + ShellJoin(append([]string{exe}, args...)) + "\n" +
				"(or: claude mcp add --scope user -e " + config.EnvConfig + "=" + ShellQuote(cfg) + " plughost -- " + ShellJoin(append([]string{exe}, noConfig...)) + ")"},
		{"MCP Inspector (its own --config clashes, so the file is named by $" + config.EnvConfig + ")", "run",
			"npx @modelcontextprotocol/inspector -e " + config.EnvConfig + "=" + ShellQuote(cfg) + " " +
				ShellJoin(append([]string{exe}, noConfig...))},
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

// ShellJoin quotes each word for a POSIX shell where it needs it.
func ShellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = ShellQuote(w)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes s for a POSIX shell where it needs it: a word of
// safe characters as it is, anything else in single quotes.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+%,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
