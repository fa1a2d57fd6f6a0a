package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellQuote: a word of safe characters stays as it is; anything
// else is single-quoted, a quote inside closed and escaped.
func TestShellQuote(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"/usr/local/bin/plughost":  "/usr/local/bin/plughost",
		"--config":                 "--config",
		"":                         "''",
		"/Users/me/My Files/x.hcl": "'/Users/me/My Files/x.hcl'",
		"it's":                     `'it'\''s'`,
		"$HOME":                    "'$HOME'",
	}
	for in, want := range tests {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
	if got := ShellJoin([]string{"a b", "c"}); got != "'a b' c" {
		t.Errorf("ShellJoin = %s", got)
	}
}

// TestClientSnippets: each client's snippet runs exe with the arguments
// in its own format, and the one naming the file by the environment
// drops --config FILE.
func TestClientSnippets(t *testing.T) {
	t.Parallel()
	args := []string{"serve", "--config", "/c/p.hcl", "--plugins", "/p"}
	got := map[string]ClientSnippet{}
	for _, s := range ClientSnippets("/bin/plughost", args, "/c/p.hcl") {
		name, _, _ := strings.Cut(s.Client, " (") // the Inspector's says why
		got[name] = s
	}
	tests := map[string][]string{
		"Claude Desktop": {`"mcpServers"`, `"command": "/bin/plughost"`, `"--config"`, `"env": {"PLUGHOST_CONFIG": "/c/p.hcl"}`, `"args": ["serve","--plugins","/p"]`},
		"Cursor":         {`"mcpServers"`, `"command": "/bin/plughost"`},
		"VS Code":        {`"servers"`, `"type": "stdio"`},
		"MCP Inspector":  {"npx @modelcontextprotocol/inspector -e PLUGHOST_CONFIG=/c/p.hcl /bin/plughost serve --plugins /p"},
	}
	for client, wants := range tests {
		s, ok := got[client]
		if !ok {
			t.Errorf("no snippet for %s", client)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(s.Text, w) {
				t.Errorf("%s's snippet lacks %s:\n%s", client, w, s.Text)
			}
		}
	}
	code := got["Claude Code"]
	if want := "claude mcp add --scope user plughost -- /bin/plughost serve --config /c/p.hcl --plugins /p"; !strings.HasPrefix(code.Text, want) {
		t.Errorf("Claude Code's snippet %q, want it to start with %q", code.Text, want)
	}
	var desktop map[string]map[string]stdioServer
	if err := json.Unmarshal([]byte(strings.SplitN(got["Claude Desktop"].Text, "\n(", 2)[0]), &desktop); err != nil {
		t.Fatalf("Claude Desktop's snippet is not JSON: %v", err)
	}
	if s := desktop["mcpServers"]["plughost"]; s.Command != "/bin/plughost" || strings.Join(s.Args, " ") != strings.Join(args, " ") {
		t.Errorf("Claude Desktop's server = %+v", s)
	}
}

// TestWriteConfig: a missing file is made (its directory too, mode 0644),
// an existing one keeps its mode and gets the blocks added, and a block
// of a plugin it has is kept unless replace.
func TestWriteConfig(t *testing.T) {
	t.Parallel()
	blocks := []Block{{Name: "notes", Text: "  plugin \"notes\" {\n    env = [\"NOTES_TOKEN\"]\n  }\n", Plugin: true}}
	path := filepath.Join(t.TempDir(), "sub", "plughost.hcl")
	kept, err := WriteConfig(path, blocks, false)
	if err != nil || len(kept) != 0 {
		t.Fatalf("WriteConfig of a new file = %v, %v", kept, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("new file: %v, %v", st, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		replace bool
		kept    int
	}{{false, 1}, {true, 0}}
	for _, tc := range tests {
		kept, err := WriteConfig(path, blocks, tc.replace)
		if err != nil || len(kept) != tc.kept {
			t.Errorf("WriteConfig again, replace %v = %v, %v; want %d kept", tc.replace, kept, err, tc.kept)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("replace %v: the file's mode became %v (%v)", tc.replace, st.Mode(), err)
		}
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `env = ["NOTES_TOKEN"]`) {
		t.Errorf("the file lacks the block:\n%s", b)
	}
}
