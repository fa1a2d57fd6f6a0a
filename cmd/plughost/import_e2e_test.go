package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// `plughost import` of a Claude Desktop file holding the three reference
// servers (installed, run on Node 22 by path: npx's install-once is
// another test's), the memory server's file in the user's home, writes
// declarations and one configuration file under which all three run with
// no decision left to the operator: the filesystem server writes into its
// directory, the memory server reads the memory imported (copied into its
// data directory) and writes there, the everything server gets the API
// key import moved into a secret file.
func TestImportedServersLoad(t *testing.T) {
	t.Parallel()
	everything, node := referenceServer(t, "server-everything")
	filesystem, _ := referenceServer(t, "server-filesystem")
	memory, _ := referenceServer(t, "server-memory")
	home := t.TempDir()
	docs, memFile := filepath.Join(home, "Documents"), filepath.Join(home, "memory.jsonl")
	if err := os.Mkdir(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(docs, 0o777); err != nil { // a test run as root runs the servers as nobody
		t.Fatal(err)
	}
	entity := `{"type":"entity","name":"imported_entity","entityType":"test","observations":["carried over"]}`
	if err := os.WriteFile(memFile, []byte(entity+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sample, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{everything, "stdio"}, "env": map[string]string{"EVERYTHING_API_KEY": "k-789"}},
		"filesystem": map[string]any{"command": node, "args": []string{filesystem, docs}},
		"memory":     map[string]any{"command": node, "args": []string{memory}, "env": map[string]string{"MEMORY_FILE_PATH": memFile}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	if err := os.WriteFile(file, sample, 0o600); err != nil {
		t.Fatal(err)
	}
	dir, xdg := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(xdg, "data"), "XDG_CACHE_HOME="+filepath.Join(xdg, "cache"),
		"XDG_STATE_HOME="+filepath.Join(xdg, "state"), "XDG_CONFIG_HOME="+filepath.Join(xdg, "config"), "PLUGHOST_CONFIG=")
	imp := exec.Command(bin.plughost, "import", "--plugins", dir, file) // the configuration file by default
	imp.Env = env
	out, err := imp.CombinedOutput()
	if err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	config := filepath.Join(xdg, "config", "plughost", "plughost.hcl")
	if !strings.Contains(string(out), "wrote "+config+": start with plughost serve --config "+config) {
		t.Fatalf("import did not write the default configuration file:\n%s", out)
	}
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin.plughost, append(args, "--plugins", dir, "--config", config)...)
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("plughost %s: %v\n%s\nimport said:\n%s", args[0], err, b, out)
		}
		return string(b)
	}
	listing := cli("plugins")
	for _, name := range []string{"everything", "filesystem", "memory"} {
		if !regexp.MustCompile(`(?m)^` + name + ` +running`).MatchString(listing) {
			t.Errorf("%s is not running:\n%s", name, listing)
		}
	}
	// What each runs is shown; its env values (which may be secrets) are not.
	if want := "(declared server: " + node + " " + everything + " stdio)"; !strings.Contains(listing, want) {
		t.Errorf("the listing lacks %q:\n%s", want, listing)
	}
	if strings.Contains(listing, "memory.jsonl") {
		t.Errorf("the listing shows a declaration's env:\n%s", listing)
	}
	if got := cli("call", "get-env"); !strings.Contains(got, `"EVERYTHING_API_KEY": "k-789"`) && !strings.Contains(got, `"EVERYTHING_API_KEY":"k-789"`) {
		t.Errorf("the secret env_files names does not reach the server:\n%s", got)
	}
	if got := cli("call", "read_graph"); !strings.Contains(got, "carried over") {
		t.Errorf("read_graph does not show the memory imported:\n%s", got)
	}
	cli("call", "create_entities", "--args", `{"entities":[{"name":"new_entity","entityType":"test","observations":["written"]}]}`)
	data, err := os.ReadFile(filepath.Join(xdg, "state", "plughost", "plugins", "memory", "data", "memory.jsonl"))
	if err != nil || !strings.Contains(string(data), "new_entity") || !strings.Contains(string(data), "imported_entity") {
		t.Errorf("the memory server's file in its data directory: %q, %v; want both entities", data, err)
	}
	cli("call", "write_file", "--args", fmt.Sprintf(`{"path":%q,"content":"hello"}`, filepath.Join(docs, "note.txt")))
	if b, err := os.ReadFile(filepath.Join(docs, "note.txt")); err != nil || string(b) != "hello" {
		t.Errorf("the filesystem server did not write into its directory: %q, %v", b, err)
	}
}

// A remote server whose Authorization header is in a file (header_files,
// as import writes an entry's literal secret header): refused until the
// operator grants the file, then sent, read by the host from the file.
func TestWrappedRemoteHeaderFiles(t *testing.T) {
	t.Parallel()
	pluginsA := t.TempDir()
	copyPlugin(t, "echo", pluginsA, "echo")
	stderrA := startRemote(t, "127.0.0.1:0", "s3cret-token", pluginsA)
	m := listenURL.FindStringSubmatch(stderrA.String())
	if m == nil {
		t.Fatalf("no URL in A's log:\n%s", stderrA)
	}
	header := filepath.Join(t.TempDir(), "authorization")
	if err := os.WriteFile(header, []byte("Bearer s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	declare(t, dir, "remote", map[string]any{"url": m[1] + "/mcp", "header_files": map[string]string{"Authorization": header}})
	refused := serveWrappedStdio(t, dir, "")
	refused.stderr.await(t, "header_files: Authorization "+header+": the operator grants it to this server with allow_read")
	refused.cs.Close()

	config := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(config, []byte("sandbox {\n  plugin \"remote\" {\n    allow_read = [\""+header+"\"]\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := serveWrappedStdio(t, dir, config)
	c.awaitTool(t, "echo")
	if got := c.call(t, "echo", map[string]any{"text": "with a header from a file"}); !strings.Contains(got, "with a header from a file") {
		t.Errorf("echo = %q", got)
	}
}
