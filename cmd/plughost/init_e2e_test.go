package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// snippets are the JSON documents plughost init printed, in order (Claude
// Desktop, Cursor, VS Code): each starts at a line "{" and ends at the
// next line "}".
func snippets(t *testing.T, out string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	var cur []string
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "{":
			cur = []string{line}
		case cur != nil:
			cur = append(cur, line)
			if line == "}" {
				var doc map[string]any
				if err := json.Unmarshal([]byte(strings.Join(cur, "\n")), &doc); err != nil {
					t.Fatalf("a snippet is not JSON: %v\n%s", err, strings.Join(cur, "\n"))
				}
				docs = append(docs, doc)
				cur = nil
			}
		}
	}
	return docs
}

// stdioEntry is a client's entry for a server it starts.
type stdioEntry struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// snippetEntry is the plughost entry of a snippet under key ("mcpServers", or
// VS Code's "servers").
func snippetEntry(t *testing.T, doc map[string]any, key string) stdioEntry {
	t.Helper()
	b, _ := json.Marshal(doc[key].(map[string]any)["plughost"])
	var e stdioEntry
	if err := json.Unmarshal(b, &e); err != nil || e.Command == "" {
		t.Fatalf("no %s.plughost command in %v", key, doc)
	}
	return e
}

// runAsClient starts e as a desktop client does (its command and args,
// the user's environment env), connects the official go-sdk client and
// returns the tools it lists.
func runAsClient(t *testing.T, e stdioEntry, env []string) []string {
	t.Helper()
	cmd := exec.Command(e.Command, e.Args...)
	cmd.Env = env
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "claude-desktop-like", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to %s %v: %v\nstderr:\n%s", e.Command, e.Args, err, stderr.String())
	}
	defer session.Close()
	var names []string
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v\nstderr:\n%s", err, stderr.String())
		}
		names = append(names, tool.Name)
	}
	return names
}

// userEnv is the environment of a user whose home is home, with no XDG
// variables set: every default directory is under home.
func userEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "PLUGHOST_") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home)
}

// TestInit: plughost init writes the starter configuration where plughost
// looks by default, creates the plugin directory, keeps an existing file
// unless --force, and prints snippets that parse, name this binary by its
// absolute path with serve --config, and — Claude Desktop's, run as
// written by a real client — list the tools of the plugin directory.
func TestInit(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := userEnv(home)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin.plughost, args...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("plughost %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run("init")
	cfg := filepath.Join(home, ".config", "plughost", "plughost.hcl")
	pluginDir := filepath.Join(home, ".local", "share", "plughost", "plugins")
	if !strings.Contains(out, "wrote "+cfg) || !strings.Contains(out, pluginDir) {
		t.Fatalf("init did not say where it wrote:\n%s", out)
	}
	if st, err := os.Stat(pluginDir); err != nil || !st.IsDir() {
		t.Fatalf("plugin directory: %v", err)
	}
	exe, err := filepath.EvalSymlinks(bin.plughost)
	if err != nil {
		t.Fatal(err)
	}
	docs := snippets(t, out)
	if len(docs) != 3 {
		t.Fatalf("%d JSON snippets; want Claude Desktop's, Cursor's and VS Code's\n%s", len(docs), out)
	}
	want := stdioEntry{Command: exe, Args: []string{"serve", "--config", cfg}}
	desktop, cursor, vscode := snippetEntry(t, docs[0], "mcpServers"), snippetEntry(t, docs[1], "mcpServers"), snippetEntry(t, docs[2], "servers")
	for name, got := range map[string]stdioEntry{"Claude Desktop": desktop, "Cursor": cursor} {
		if got.Command != want.Command || !slices.Equal(got.Args, want.Args) || got.Type != "" {
			t.Errorf("%s: %+v; want %+v", name, got, want)
		}
	}
	if vscode.Type != "stdio" || vscode.Command != exe || !slices.Equal(vscode.Args, want.Args) {
		t.Errorf("VS Code: %+v; want type stdio and %+v", vscode, want)
	}
	if line := "claude mcp add --scope user plughost -- " + exe + " serve --config " + cfg; !strings.Contains(out, line+"\n") {
		t.Errorf("no Claude Code line %q in\n%s", line, out)
	}
	if line := "-e PLUGHOST_CONFIG=" + cfg + " " + exe + " serve\n"; !strings.Contains(out, line) {
		t.Errorf("no MCP Inspector line with %q in\n%s", line, out)
	}

	// Kept without --force; replaced with it.
	if err := os.WriteFile(cfg, []byte("# mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := run("init"); !strings.Contains(out, "kept "+cfg) {
		t.Errorf("a second init did not keep the file:\n%s", out)
	}
	if b, _ := os.ReadFile(cfg); string(b) != "# mine\n" {
		t.Errorf("the file was replaced without --force: %q", b)
	}
	if out := run("init", "--force"); !strings.Contains(out, "wrote "+cfg) {
		t.Errorf("init --force did not replace the file:\n%s", out)
	}
	if out := run("check"); !strings.HasPrefix(out, "ok: "+cfg) {
		t.Errorf("check of the starter configuration: %s", out)
	}

	copyPlugin(t, "echo", pluginDir, "echo")
	if tools := runAsClient(t, desktop, env); !slices.Contains(tools, "echo") {
		t.Errorf("Claude Desktop's snippet, run: tools %v; want echo", tools)
	}
}

// lockedBuffer is a log destination tests read.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
