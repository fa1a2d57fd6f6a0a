package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/importer"
)

// The README's quickstart, between these markers: a fenced sh block of
// at most ten commands.
const (
	quickstartStart = "<!-- quickstart"
	quickstartEnd   = "<!-- /quickstart -->"
	quickstartClone = "git clone https://github.com/plughost/plughost && cd plughost"
)

// quickstart returns the commands of the README's quickstart block.
func quickstart(t *testing.T, readme string) []string {
	t.Helper()
	_, block, ok := strings.Cut(readme, quickstartStart)
	if ok {
		block, _, ok = strings.Cut(block, quickstartEnd)
	}
	if !ok {
		t.Fatalf("README.md has no block between %q and %q", quickstartStart, quickstartEnd)
	}
	_, block, ok = strings.Cut(block, "```sh\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("the quickstart has no ```sh block")
	}
	var cmds []string
	for line := range strings.Lines(block) {
		if line = strings.TrimSpace(line); line != "" {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// TestReadmeQuickstart runs the README's quickstart as written, in an
// empty home directory: the clone is this checkout (the first line is
// checked, then replaced by a cd into it), every other line runs in
// bash, in order, and must succeed; then the Claude Desktop snippet
// `plughost init` printed is run as Claude Desktop runs it, by the
// official go-sdk client, which must list the bundled plugins' tools.
func TestReadmeQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs plughost (make install): not in -short")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("this test needs make (Debian: apt-get install make)")
	}
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := quickstart(t, string(readme))
	if len(cmds) > 10 {
		t.Errorf("the quickstart has %d commands; at most ten", len(cmds))
	}
	if len(cmds) == 0 || cmds[0] != quickstartClone {
		t.Fatalf("the quickstart's first line is %q; want %q", cmds, quickstartClone)
	}
	script := "set -euo pipefail\ncd " + importer.ShellQuote(root) + "\n" // the clone: this checkout
	for _, c := range cmds[1:] {
		script += "echo \"+ $(cat <<'__CMD__'\n" + c + "\n__CMD__\n)\"\n" + c + "\n"
	}

	// An empty home, as a new user has; Go's caches stay the test's own
	// (a build from nothing would take minutes, and the network).
	home := t.TempDir()
	var env []string
	for _, kv := range userEnv(home) {
		name, _, _ := strings.Cut(kv, "=")
		if name != "MAKEFLAGS" && name != "MAKELEVEL" && name != "MFLAGS" { // a new user's shell, not make test's
			env = append(env, kv)
		}
	}
	for _, name := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY", "GOTOOLCHAIN"} {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, name+"="+strings.TrimSpace(string(out)))
	}
	// ~/.local/bin on the PATH, as most distributions' profiles put it
	// once it exists.
	for i, kv := range env {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + filepath.Join(home, ".local", "bin") + ":" + path
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the quickstart failed: %v\n%s", err, out.String())
	}

	docs := snippets(t, out.String())
	if len(docs) == 0 {
		t.Fatalf("plughost init printed no snippet\n%s", out.String())
	}
	desktop := snippetEntry(t, docs[0], "mcpServers")
	installed := filepath.Join(home, ".local", "bin", "plughost")
	if desktop.Command != installed {
		t.Errorf("the snippet's command is %s; want the installed %s", desktop.Command, installed)
	}
	tools := runAsClient(t, desktop, env)
	for _, want := range []string{"echo", "get_current_time", "create_file"} {
		if !slices.Contains(tools, want) {
			t.Errorf("Claude Desktop's snippet, run: tools %v; want %s among them\nquickstart output:\n%s", tools, want, out.String())
		}
	}
}
