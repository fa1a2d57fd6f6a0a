package check

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// authorsPage is the plugin authors' page whose example and build lines
// the test below runs.
const authorsPage = "../../docs/plugin-authors.md"

// fencedBlocks returns the bodies of a Markdown section's fenced blocks of
// one language, in order. The section runs from its "## " heading to the
// next one.
func fencedBlocks(t *testing.T, page, heading, lang string) []string {
	t.Helper()
	_, section, ok := strings.Cut(string(bytesOf(t, page)), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", page, heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var out []string
	for {
		_, rest, ok := strings.Cut(section, "```"+lang+"\n")
		if !ok {
			return out
		}
		body, after, ok := strings.Cut(rest, "```")
		if !ok {
			t.Fatalf("%s, %q: an unclosed ```%s block", page, heading, lang)
		}
		out, section = append(out, body), after
	}
}

// TestPluginBuildsAsASeparateModule: a new author, outside the checkout,
// builds the docs' example plugin as a module of their own with the lines
// "Building against a checkout or a source archive" gives (their `go`
// commands, run in order, ../plughost being this checkout and the plugin
// directory a temporary one), and plughost loads it and calls its tool.
// The module proxy and cache are the machine's: the replace makes
// plughost's own source come from the checkout, its dependencies from
// them, as an author's would.
func TestPluginBuildsAsASeparateModule(t *testing.T) {
	t.Parallel()
	example := fencedBlocks(t, authorsPage, "Writing a plugin in Go", "go")
	lines := fencedBlocks(t, authorsPage, "Building against a checkout or a source archive", "sh")
	if len(example) == 0 || len(lines) != 1 {
		t.Fatalf("want the greeter's go block and one sh block, got %d and %d", len(example), len(lines))
	}
	checkout, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	mod, plugins := filepath.Join(tmp, "greeter"), filepath.Join(tmp, "plugins")
	for _, d := range []string{mod, plugins} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(example[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	ran := 0
	for line := range strings.SplitSeq(lines[0], "\n") {
		line, _, _ = strings.Cut(line, "#")
		args := strings.Fields(line)
		if len(args) == 0 || args[0] != "go" {
			continue // mkdir, cd: done above
		}
		for i, a := range args {
			a = strings.ReplaceAll(a, "=../plughost", "="+checkout)
			args[i] = strings.ReplaceAll(a, "~/.local/share/plughost/plugins", plugins)
		}
		cmd := exec.Command("go", args[1:]...)
		cmd.Dir, cmd.Env = mod, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		ran++
	}
	if ran < 4 {
		t.Fatalf("the sh block has %d go commands: want init, the replace, tidy and build at least", ran)
	}

	bin, err := plughostBin()
	if err != nil {
		t.Fatal(err)
	}
	call := exec.Command(bin, "call", "greet", "--args", `{"name":"Ada"}`, "--plugins", plugins,
		"--workspace", filepath.Join(tmp, "ws"), "--log-level", "error")
	call.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(tmp, "state"), "XDG_CACHE_HOME="+filepath.Join(tmp, "cache"),
		"XDG_DATA_HOME="+filepath.Join(tmp, "data"), "XDG_CONFIG_HOME="+filepath.Join(tmp, "config"), "PLUGHOST_CONFIG=")
	out, err := call.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Hello, Ada!") {
		t.Fatalf("plughost call greet: %v\n%s", err, out)
	}
}
