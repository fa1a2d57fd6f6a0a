package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/sandbox"
)

// runImport runs `plughost import args...` in-process and returns its exit
// status, stdout and stderr.
func runImport(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	if !slices.Contains(args, "--config-out") { // never the user's own configuration file
		args = append([]string{"--config-out", "-"}, args...)
	}
	if !slices.Contains(args, "--state") { // nor state directory
		args = append([]string{"--state", t.TempDir()}, args...)
	}
	code := run(append([]string{"import"}, args...), strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// writeSample writes a desktop host's file into a new temporary directory
// and returns its path and a new, empty plugin directory.
func writeSample(t *testing.T, name, content string) (file, dir string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, t.TempDir()
}

// loadDecl reads back a declaration written, checking its mode.
func loadDecl(t *testing.T, dir, name string) *declared.Server {
	t.Helper()
	path := filepath.Join(dir, name+declared.Suffix)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", path, st.Mode().Perm())
	}
	s, err := declared.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// snippetOf returns the sandbox block printed at the end of stdout, parsed.
func snippetOf(t *testing.T, stdout string) (string, *config.Config) {
	t.Helper()
	i := strings.Index(stdout, "# Sandbox grants of the servers")
	if i < 0 {
		t.Fatalf("no sandbox block in:\n%s", stdout)
	}
	return stdout[i:], parseSnippet(t, stdout[i:])
}

func parseSnippet(t *testing.T, snippet string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(snippet), "snippet.hcl")
	if err != nil {
		t.Fatalf("the sandbox block does not parse: %v\n%s", err, snippet)
	}
	return cfg
}

func mustContain(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// The servers people start with, from Claude Desktop's file: the
// filesystem server on a directory, the memory server with its file in the
// user's home, and a remote server with a literal bearer token and API key.
// Import writes the declarations, the filesystem server's directory
// granted read-write, the memory file moved to the server's ${HOME} and
// copied into its data directory, the secrets into 0600 files its
// declaration names and its block grants; no server gets the network (npx
// installs once). The blocks are added to an existing configuration file,
// which keeps what it had and parses. Status 0: everything was carried
// over. A second run keeps the files without --force and replaces them,
// blocks included, with it.
func TestImportClaudeDesktop(t *testing.T) {
	t.Parallel()
	home, state := t.TempDir(), t.TempDir()
	docs := filepath.Join(home, "Documents")
	memory := filepath.Join(home, "memory.jsonl")
	if err := os.Mkdir(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(memory, []byte(`{"type":"entity","name":"me"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file, dir := writeSample(t, "claude_desktop_config.json", fmt.Sprintf(`{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", %q, "/no/such/dir"]},
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": %q}},
    "linear": {"url": "https://mcp.linear.app/mcp", "headers": {"Authorization": "Bearer lin_api_123", "X-API-Key": "k-456", "X-Team": "core"}}
  }
}`, docs, memory))
	cfgPath := filepath.Join(t.TempDir(), "plughost.hcl")
	const before = "# mine\nplugins {\n  start = \"lazy\"\n}\nsandbox {\n  memory = \"256MiB\" # every plugin\n  plugin \"echo\" {\n    pids = 8\n  }\n}\n"
	if err := os.WriteFile(cfgPath, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runImport(t, "--plugins", dir, "--state", state, "--config-out", cfgPath, file)
	if code != 0 {
		t.Fatalf("exit status %d, want 0; stderr: %s\n%s", code, stderr, stdout)
	}
	secrets := filepath.Join(state, "secrets", "linear")
	want := map[string]*declared.Server{
		"filesystem": {Type: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", docs, "/no/such/dir"}},
		"memory": {Type: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"},
			Env: map[string]string{"MEMORY_FILE_PATH": "${HOME}/memory.jsonl"}},
		"linear": {Type: "http", URL: "https://mcp.linear.app/mcp", Headers: map[string]string{"X-Team": "core"},
			BearerTokenFile: filepath.Join(secrets, "bearer_token"), HeaderFiles: map[string]string{"X-API-Key": filepath.Join(secrets, "x-api-key")}},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, loadDecl(t, dir, name)); diff != "" {
			t.Errorf("%s.mcp.json (-want +got):\n%s", name, diff)
		}
	}
	data := filepath.Join(state, "plugins", "memory", "data")
	for path, want := range map[string]struct {
		content string
		mode    os.FileMode
	}{
		filepath.Join(secrets, "bearer_token"): {"lin_api_123\n", 0o600},
		filepath.Join(secrets, "x-api-key"):    {"k-456\n", 0o600},
		filepath.Join(data, "memory.jsonl"):    {`{"type":"entity","name":"me"}` + "\n", 0o644}, // in a 0700 directory
		secrets:                                {"", 0o700 | os.ModeDir},
		data:                                   {"", 0o700 | os.ModeDir},
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if st.Mode() != want.mode {
			t.Errorf("%s: mode %v, want %v", path, st.Mode(), want.mode)
		}
		if b, err := os.ReadFile(path); !st.IsDir() && (err != nil || string(b) != want.content) {
			t.Errorf("%s: %q, %v; want %q", path, b, err, want.content)
		}
	}
	mustContain(t, "stdout", stdout,
		`"mcpServers" (Claude Desktop or Cursor), 3 servers`,
		"filesystem: wrote "+filepath.Join(dir, "filesystem.mcp.json"),
		"note: npx @modelcontextprotocol/server-memory: plughost installs it once, at the server's first start",
		"granted: args[2] "+docs+": read-write (a directory: in the desktop host the server had your rights on it); if it only reads it, move it from allow_write to allow_read",
		"note: args[3] /no/such/dir does not exist here: nothing granted",
		"moved: env MEMORY_FILE_PATH "+memory+" is now ${HOME}/memory.jsonl, in the server's own data directory "+data,
		"import copied the file there (the original stays as it was, no longer updated)",
		"secret: headers Authorization: its bearer token is now in "+filepath.Join(secrets, "bearer_token")+" (mode 0600)",
		"secret: headers X-API-Key: its value is now in "+filepath.Join(secrets, "x-api-key"),
		`note: no network: if it calls an outside API, add allow_net = ["HOST:443"]`,
		"wrote "+cfgPath+": start with plughost serve --config "+cfgPath)
	if strings.Contains(stdout, "lin_api_123") || strings.Contains(stdout, "k-456") {
		t.Errorf("a secret is printed:\n%s", stdout)
	}
	written, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(written), before[:strings.LastIndex(before, "}")]) {
		t.Errorf("the configuration lost what it had:\n%s", written)
	}
	cfg := parseSnippet(t, string(written))
	if cfg.Plugins.Start != "lazy" || cfg.Sandbox.Plugins["echo"].Pids != 8 {
		t.Errorf("the configuration's own settings changed:\n%s", written)
	}
	fs, mem, lin := cfg.Sandbox.Plugins["filesystem"], cfg.Sandbox.Plugins["memory"], cfg.Sandbox.Plugins["linear"]
	for name, p := range map[string]sandbox.Policy{"filesystem": fs, "memory": mem} {
		if p.Runtime != sandbox.RuntimeNode || p.Net != "" || p.Memory != 256<<20 {
			t.Errorf("plugin %q: runtime %q, allow_net %q, memory %d; want node, none, the default block's 256MiB", name, p.Runtime, p.Net, p.Memory)
		}
	}
	if !slices.Equal(fs.AllowWrite, []string{docs}) || len(mem.AllowWrite)+len(mem.AllowRead) != 0 {
		t.Errorf("filesystem allow_write %v, want [%s]; memory allow_read %v allow_write %v, want none", fs.AllowWrite, docs, mem.AllowRead, mem.AllowWrite)
	}
	for _, f := range []string{filepath.Join(secrets, "bearer_token"), filepath.Join(secrets, "x-api-key")} {
		if !lin.Readable(f) {
			t.Errorf("linear: %s not granted (allow_read %v)", f, lin.AllowRead)
		}
	}

	// Again: the files exist, and are kept without --force, blocks too.
	path := filepath.Join(dir, "memory.mcp.json")
	if err := os.WriteFile(path, []byte(`{"command": "/bin/mine"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runImport(t, "--plugins", dir, "--state", state, "--config-out", cfgPath, file)
	if code != 1 {
		t.Errorf("second run: exit status %d, want 1", code)
	}
	mustContain(t, "stdout", stdout, "memory: SKIPPED: "+path+" exists (--force overwrites it)")
	mustContain(t, "stderr", stderr, "3 skipped")
	if s := loadDecl(t, dir, "memory"); s.Command != "/bin/mine" {
		t.Errorf("memory.mcp.json overwritten without --force: %+v", s)
	}
	if again, _ := os.ReadFile(cfgPath); string(again) != string(written) {
		t.Errorf("the configuration changed without --force:\n%s", again)
	}
	code, stdout, _ = runImport(t, "--force", "--plugins", dir, "--state", state, "--config-out", cfgPath, file)
	if code != 0 {
		t.Errorf("--force: exit status %d, want 0:\n%s", code, stdout)
	}
	if s := loadDecl(t, dir, "memory"); s.Command != "npx" {
		t.Errorf("memory.mcp.json not overwritten with --force: %+v", s)
	}
	mustContain(t, "stdout", stdout, data+"/memory.jsonl exists already: kept")
	if again, _ := os.ReadFile(cfgPath); string(again) != string(written) {
		t.Errorf("--force: the blocks replaced are not the same:\n%s\nwant:\n%s", again, written)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".plughost-import-*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// Cursor's file: a secret-looking env value goes to a file named in
// env_files (status 0), a script whose #! names node gets the node runtime, a
// server known to call out gets the network, a docker server is written
// but reported as not runnable (status 1), and a name with a dot is
// renamed.
func TestImportCursor(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "server")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env node\nconsole.log(1)\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	file, dir := writeSample(t, "mcp.json", fmt.Sprintf(`{"mcpServers": {
  "linear.app": {"url": "https://mcp.linear.app/mcp", "headers": {"X-Team": "core"}},
  "weather": {"type": "stdio", "command": %q, "env": {"WEATHER_API_KEY": "abc123", "UNITS": "metric"}},
  "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github@2025.4.8"]}
}}`, script))
	state := t.TempDir()
	code, stdout, stderr := runImport(t, "--plugins", dir, "--state", state, file)
	if code != 0 {
		t.Fatalf("exit status %d, want 0; stderr: %s\n%s", code, stderr, stdout)
	}
	if diff := cmp.Diff(&declared.Server{Type: "http", URL: "https://mcp.linear.app/mcp",
		Headers: map[string]string{"X-Team": "core"}}, loadDecl(t, dir, "linear_app")); diff != "" {
		t.Errorf("linear_app.mcp.json (-want +got):\n%s", diff)
	}
	keyFile := filepath.Join(state, "secrets", "weather", "weather_api_key")
	if s := loadDecl(t, dir, "weather"); s.EnvFiles["WEATHER_API_KEY"] != keyFile || s.Env["UNITS"] != "metric" || s.Command != script {
		t.Errorf("weather.mcp.json: %+v", s)
	}
	if b, err := os.ReadFile(keyFile); err != nil || string(b) != "abc123\n" {
		t.Errorf("%s: %q, %v", keyFile, b, err)
	}
	mustContain(t, "stdout", stdout,
		`renamed: provider name "linear_app"`,
		"secret: env WEATHER_API_KEY: its value is now in "+keyFile+" (mode 0600), named in the declaration's env_files",
		`granted: allow_net = "all": @modelcontextprotocol/server-github calls outside services at run time; to narrow it: allow_net = ["api.github.com:443"]`)
	if strings.Contains(stdout, "env UNITS") {
		t.Errorf("UNITS reported as a secret:\n%s", stdout)
	}
	snippet, cfg := snippetOf(t, stdout)
	mustContain(t, "snippet", snippet, `# plugin "linear_app": a remote server`)
	if _, ok := cfg.Sandbox.Plugins["linear_app"]; ok {
		t.Errorf("a remote server has a plugin block:\n%s", snippet)
	}
	if p := cfg.Sandbox.Plugins["weather"]; p.Runtime != sandbox.RuntimeNode || p.Net != "" {
		t.Errorf("weather: runtime %q, allow_net %q; want node, no network", p.Runtime, p.Net)
	}
	if p := cfg.Sandbox.Plugins["github"]; p.Net != sandbox.NetAll {
		t.Errorf("github: allow_net %q, want all", p.Net)
	}

	file, dir = writeSample(t, "mcp.json", `{"mcpServers": {"github": {"command": "docker",
  "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"]}}}`)
	code, stdout, stderr = runImport(t, "--plugins", dir, file)
	if code != 1 {
		t.Errorf("docker: exit status %d, want 1", code)
	}
	loadDecl(t, dir, "github")
	mustContain(t, "stdout", stdout, "not carried: docker runs the server in a container: that needs the container daemon's socket",
		"cannot run in plughost's sandbox as it is")
	mustContain(t, "stderr", stderr, "1 server not carried over fully")
	snippetOf(t, stdout)
}

const vscodeSample = `{
  // Asked for when a server starts.
  "inputs": [
    {"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true},
  ],
  "servers": {
    /* A python server through uvx. */
    "perplexity": {
      "type": "stdio",
      "command": "uvx",
      "args": ["--from", "mcp-server-perplexity==1.0", "mcp-server-perplexity"],
      "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}", "LANG": "${env:LANG}", "LEVEL": "info"},
      "envFile": "${workspaceFolder}/.env",
    },
    "legacy": {"type": "sse", "url": "https://mcp.example.com/sse", "headers": {"Authorization": "Bearer ${env:EXAMPLE_TOKEN}"}},
    "local": {"command": "node", "args": ["${workspaceFolder}/server.js"]},
  },
}`

// VS Code's mcp.json, with comments and trailing commas: inputs and
// variables are not resolved (each said, with its field), Authorization
// "Bearer ${env:X}" becomes bearer_token_env, ${env:NAME} for NAME is
// passed through, an sse server stays one; status 1.
func TestImportVSCode(t *testing.T) {
	t.Parallel()
	file, dir := writeSample(t, "mcp.json", vscodeSample)
	out := filepath.Join(t.TempDir(), "import.hcl")
	code, stdout, stderr := runImport(t, "--plugins", dir, "--config-out", out, file)
	if code != 1 {
		t.Errorf("exit status %d, want 1; stderr: %s", code, stderr)
	}
	mustContain(t, "stderr", stderr, "2 servers not carried over fully")
	want := map[string]*declared.Server{
		"perplexity": {Type: "stdio", Command: "uvx", Args: []string{"--from", "mcp-server-perplexity==1.0", "mcp-server-perplexity"},
			Env: map[string]string{"LEVEL": "info"}},
		"legacy": {Type: "sse", URL: "https://mcp.example.com/sse", BearerTokenEnv: "EXAMPLE_TOKEN"},
		"local":  {Type: "stdio", Command: "node", Args: []string{"${workspaceFolder}/server.js"}},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, loadDecl(t, dir, name)); diff != "" {
			t.Errorf("%s.mcp.json (-want +got):\n%s", name, diff)
		}
	}
	mustContain(t, "stdout", stdout,
		`"servers" (VS Code's mcp.json), 3 servers`,
		`not carried: env PERPLEXITY_API_KEY = "${input:perplexity-key}": ${input:perplexity-key}, a secret VS Code prompts for ("Perplexity API Key")`,
		"set PERPLEXITY_API_KEY in plughost's environment",
		`not carried: envFile "${workspaceFolder}/.env": its variables are not read`,
		`not carried: args[0] "${workspaceFolder}/server.js": ${workspaceFolder}`,
		`carried as bearer_token_env "EXAMPLE_TOKEN"`,
		"uvx mcp-server-perplexity==1.0: plughost installs it once",
		"wrote "+out+": start with plughost serve --config "+out)
	snippet, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	cfg := parseSnippet(t, string(snippet))
	p := cfg.Sandbox.Plugins["perplexity"]
	if p.Runtime != sandbox.RuntimePython || p.Net != "" || !slices.Equal(p.Env, []string{"LANG"}) {
		t.Errorf("perplexity: runtime %q, allow_net %q, env %v; want python, none, [LANG]", p.Runtime, p.Net, p.Env)
	}
	mustContain(t, "snippet", string(snippet), `# decide: add "PERPLEXITY_API_KEY" to env`)

	// VS Code's settings.json holds the same under "mcp".
	file, dir = writeSample(t, "settings.json", `{"editor.fontSize": 14, "mcp": {"servers": {
  "legacy": {"type": "sse", "url": "https://mcp.example.com/sse"}, // no token
}}}`)
	if code, stdout, _ := runImport(t, "--plugins", dir, file); code != 0 || !strings.Contains(stdout, `(VS Code's settings.json), 1 server`) {
		t.Errorf("settings.json: exit status %d, want 0:\n%s", code, stdout)
	}
	if s := loadDecl(t, dir, "legacy"); s.Type != declared.TypeSSE {
		t.Errorf("legacy: type %q, want sse", s.Type)
	}
}

// --dry-run writes nothing, neither declarations nor the --config-out file
// nor secret files, and prints the declarations it would write.
func TestImportDryRun(t *testing.T) {
	t.Parallel()
	file, dir := writeSample(t, "mcp.json", vscodeSample)
	out := filepath.Join(t.TempDir(), "import.hcl")
	code, stdout, _ := runImport(t, "--dry-run", "--plugins", dir, "--config-out", out, file)
	if code != 1 {
		t.Errorf("exit status %d, want 1 (variables are not carried)", code)
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("--dry-run wrote into the plugin directory: %v", entries)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("--dry-run wrote %s", out)
	}
	mustContain(t, "stdout", stdout, "legacy: would write "+filepath.Join(dir, "legacy.mcp.json"),
		`"bearer_token_env": "EXAMPLE_TOKEN"`, "would add to "+out)
	snippetOf(t, stdout)

	// Nor secret files, nor copies into a server's data directory.
	home, state := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "memory.jsonl"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file, dir = writeSample(t, "claude_desktop_config.json", fmt.Sprintf(`{"mcpServers": {
  "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": %q}},
  "linear": {"url": "https://mcp.linear.app/mcp", "headers": {"Authorization": "Bearer lin_api_123"}}}}`, filepath.Join(home, "memory.jsonl")))
	if code, stdout, _ := runImport(t, "--dry-run", "--plugins", dir, "--state", state, file); code != 0 {
		t.Errorf("exit status %d, want 0:\n%s", code, stdout)
	}
	if entries, _ := os.ReadDir(state); len(entries) > 0 {
		t.Errorf("--dry-run wrote into the state directory: %v", entries)
	}
}

// Usage mistakes are status 2; a file that is no desktop host's, or names
// that collide once made provider names, status 1.
func TestImportMistakes(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"--bogus", "x.json"}, {"a.json", "b.json"}} {
		if code, _, stderr := runImport(t, args...); code != 2 || !strings.Contains(stderr, "plughost import:") {
			t.Errorf("import %q: exit status %d, want 2; stderr: %s", args, code, stderr)
		}
	}
	file, dir := writeSample(t, "other.json", `{"name": "not an MCP configuration"}`)
	if code, _, stderr := runImport(t, "--plugins", dir, file); code != 1 || !strings.Contains(stderr, `no "mcpServers", "servers"`) {
		t.Errorf("other.json: exit status %d, want 1; stderr: %s", code, stderr)
	}
	file, dir = writeSample(t, "mcp.json", `{"mcpServers": {"a.b": {"command": "/bin/a"}, "a_b": {"command": "/bin/b"},
  "bad": {"command": "x", "url": "https://x"}, "badurl": {"url": "https://${input:host}/mcp"}}}`)
	code, stdout, _ := runImport(t, "--plugins", dir, file)
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	mustContain(t, "stdout", stdout, `a_b: SKIPPED: its provider name "a_b" is "a.b"'s already`,
		"bad: SKIPPED: the declaration would not parse", `badurl: SKIPPED: url "https://${input:host}/mcp"`)
	if s := loadDecl(t, dir, "a_b"); s.Command != "/bin/a" {
		t.Errorf("a_b.mcp.json: %+v, want a.b's", s)
	}
}
