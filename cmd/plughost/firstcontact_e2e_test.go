package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/internal/npmregistry"
	"github.com/plughost/plughost/sandbox"
)

// The first hour of a desktop user, as the world is (issue 29's proof):
// a Claude Desktop file with the two servers people start with, run by
// npx as their READMEs say, and a server of their own that calls HTTPS;
// `plughost import`; `plughost serve --config` with the file import
// wrote; a real client lists and calls every server's tools.
//
// The world: packages come from a real npm registry (Verdaccio) holding
// exactly the versions conformance/package-lock.json pins for the
// filesystem and memory servers, their whole dependency closure, plus
// @plughost-test/fetch-mcp (fetchServerJS, published with npm publish);
// the user's ~/.npmrc names it registry.test:PORT, a name only the test's
// DNS server knows, reached through /etc/resolv.conf. The fetch server
// fetches https://some.test.name:PORT/, whose certificate a test CA
// signed, installed in the system store as an administrator would
// (netWorld.systemFiles; a private mount namespace, the machine's files
// untouched). The machine's node (NodeSource's: its own CA list) is told
// of the system store the way this kind of machine does:
// NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt in plughost's
// environment, which plughost passes to a server with the network.
//
// First start, the configuration as import wrote it: each npx server is
// installed once from the registry (by name, through the resolver); the
// filesystem server lists and writes in its directory, the memory server
// creates and reads its graph in its data directory; the fetch server,
// which import left without network (a commented allow_net line), fails
// to resolve some.test.name and the log names the allow_net to add. The
// user adds it; second start: nothing is installed again (the registry
// hears nothing), the fetch server gets the page over verified TLS, and
// what the first start wrote is still there.
func TestFirstContact(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a private mount namespace over /etc and a DNS server on port 53")
	}
	t.Parallel()
	for _, tool := range []string{"unshare", "mount", "npm", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed: %v", tool, err)
		}
	}
	began := time.Now()
	w := newNetWorld(t, "registry.test")
	reg := startRegistry(t)
	_, regPort, err := net.SplitHostPort(strings.Trim(strings.TrimPrefix(reg.URL, "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	regURL := "http://registry.test:" + regPort + "/"
	lockfile := filepath.Join("..", "..", "conformance", "package-lock.json")
	mirrored := reg.Mirror(t, lockfile, "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-memory")
	reg.Publish(t, npmregistry.Package{Name: "@plughost-test/fetch-mcp", Version: "1.0.0", Bin: map[string]string{"fetch-mcp": "server.js"},
		Files: map[string]string{"server.js": "#!/usr/bin/env node\n" + fetchServerJS}})
	worldReady := time.Since(began)

	// The user's home: a directory for the filesystem server, npm's
	// settings, Claude Desktop's file.
	home, err := os.MkdirTemp("", "plughost-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	docs := filepath.Join(home, "Documents")
	if err := os.Mkdir(docs, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(docs, 0o777); err != nil { // plughost as root runs the servers as nobody
		t.Fatal(err)
	}
	writeFile := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(filepath.Join(home, ".npmrc"), "registry="+regURL+"\n")
	page := "https://some.test.name:" + w.port + "/"
	desktop, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{
		"filesystem": map[string]any{"command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-filesystem", docs}},
		"memory": map[string]any{"command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-memory"},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(home, "memory.jsonl")}},
		"fetch": map[string]any{"command": "npx", "args": []string{"-y", "@plughost-test/fetch-mcp"}, "env": map[string]string{"FETCH_URL": page}},
	}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	desktopFile := filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	writeFile(desktopFile, string(desktop))

	// The user's environment: their HOME, none of plughost's or npm's
	// variables, no XDG directories (the defaults under HOME), and of the
	// variables naming extra certificates only the one that points node
	// at the system store.
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(sandbox.CertEnv, name) || name == "HOME" || strings.HasPrefix(name, "XDG_") ||
			strings.HasPrefix(name, "PLUGHOST_") || strings.HasPrefix(strings.ToLower(name), "npm_config_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt")

	imp := exec.Command(bin.plughost, "import", desktopFile)
	imp.Env = env
	out, err := imp.CombinedOutput()
	if err != nil {
		t.Fatalf("plughost import: %v\n%s", err, out)
	}
	config := filepath.Join(home, ".config", "plughost", "plughost.hcl")
	if !strings.Contains(string(out), "wrote "+config+": start with plughost serve --config "+config) {
		t.Fatalf("import did not write the default configuration file:\n%s", out)
	}
	t.Logf("plughost import:\n%s", out)
	for _, name := range []string{"filesystem", "memory", "fetch"} {
		if _, err := os.Stat(filepath.Join(home, ".local", "share", "plughost", "plugins", name+".mcp.json")); err != nil {
			t.Errorf("import wrote no declaration of %s in the default plugin directory: %v", name, err)
		}
	}
	cfg, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	fetchBlock := regexp.MustCompile(`(?s)plugin "fetch" \{\n(.*?)\n  \}`).FindSubmatch(cfg)
	commented := "    # allow_net = [\"HOST:443\"] # none: add it if it calls an outside API"
	if fetchBlock == nil || !strings.Contains(string(fetchBlock[1]), commented) {
		t.Fatalf("import's plugin block of fetch has no commented allow_net line:\n%s", cfg)
	}

	statePlughost := filepath.Join(home, ".local", "state", "plughost")
	serve := func(t *testing.T) *wrappedClient {
		t.Helper()
		files := t.TempDir()
		if err := os.Chmod(files, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := unshared(w.systemFiles(t, files), bin.plughost, "serve", "--config", config)
		cmd.Env = env
		return connectServe(t, cmd, 2*time.Minute, home)
	}
	toolNames := func(t *testing.T, c *wrappedClient) []string {
		t.Helper()
		var names []string
		for tool, err := range c.cs.Tools(t.Context(), nil) {
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			names = append(names, tool.Name)
		}
		return names
	}
	callTool := func(t *testing.T, c *wrappedClient, name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		return text(res), res.IsError
	}
	note := filepath.Join(docs, "note.txt")
	var asked []string
	var firstStart time.Duration

	// First start, as imported: everything installs; fetch has no network.
	t.Run("as imported", func(t *testing.T) {
		start := time.Now()
		c := serve(t)
		awaitInstall(t, c.stderr, "@modelcontextprotocol/server-filesystem@2026.8.31", true, 3*time.Minute)
		awaitInstall(t, c.stderr, "@modelcontextprotocol/server-memory@2026.8.31", true, 3*time.Minute)
		awaitInstall(t, c.stderr, "@plughost-test/fetch-mcp@1.0.0", false, 3*time.Minute) // npm publish to Verdaccio records no size
		for _, tool := range []string{"list_directory", "write_file", "create_entities", "read_graph", "fetch"} {
			c.awaitTool(t, tool)
		}
		firstStart = time.Since(start)
		t.Logf("tools listed %s after plughost serve started (three installs)", firstStart.Round(100*time.Millisecond))
		if names := toolNames(t, c); len(names) < 5 {
			t.Errorf("tools/list: %v", names)
		}

		// Installed from the registry by its name, the tarballs those of
		// the pinned lockfile.
		asked = reg.Requests()
		if len(asked) == 0 {
			t.Fatal("the installs asked the registry nothing")
		}
		treeLock := filepath.Join(statePlughost, "packages", "memory", "trees", "@modelcontextprotocol+server-memory@2026.8.31", "package-lock.json")
		lock, err := os.ReadFile(treeLock)
		if err != nil {
			t.Fatalf("the memory server's installed tree: %v", err)
		}
		if !strings.Contains(string(lock), `"resolved": "`+regURL+"@modelcontextprotocol/sdk/-/sdk-1.32.2.tgz") {
			t.Errorf("the memory server's lockfile does not resolve @modelcontextprotocol/sdk at %s:\n%.2000s", regURL, lock)
		}
		if want := lockIntegrity(t, lockfile, "node_modules/@modelcontextprotocol/sdk"); !strings.Contains(string(lock), want) {
			t.Errorf("the installed @modelcontextprotocol/sdk's integrity is not the pinned %s", want)
		}

		// filesystem: writes and lists in its directory.
		if got, isErr := callTool(t, c, "write_file", map[string]any{"path": note, "content": "first contact"}); isErr {
			t.Errorf("write_file: %s", got)
		}
		if b, err := os.ReadFile(note); err != nil || string(b) != "first contact" {
			t.Errorf("the filesystem server's file: %q, %v", b, err)
		}
		if got, isErr := callTool(t, c, "list_directory", map[string]any{"path": docs}); isErr || !strings.Contains(got, "[FILE] note.txt") {
			t.Errorf("list_directory %s = %q (isError %v)", docs, got, isErr)
		}

		// memory: its graph in its own data directory.
		if got, isErr := callTool(t, c, "create_entities", map[string]any{"entities": []any{
			map[string]any{"name": "plughost", "entityType": "host", "observations": []string{"met on first contact"}}}}); isErr {
			t.Errorf("create_entities: %s", got)
		}
		if got, isErr := callTool(t, c, "read_graph", nil); isErr || !strings.Contains(got, "met on first contact") {
			t.Errorf("read_graph = %q (isError %v)", got, isErr)
		}
		memFile := filepath.Join(statePlughost, "plugins", "memory", "data", "memory.jsonl")
		if b, err := os.ReadFile(memFile); err != nil || !strings.Contains(string(b), "met on first contact") {
			t.Errorf("the memory server's file %s: %q, %v", memFile, b, err)
		}

		// fetch: no network, and the log says what to add: the host and
		// port of the URL it was given.
		got, isErr := callTool(t, c, "fetch", nil)
		if !isErr || !regexp.MustCompile(`^(EAI_AGAIN|ENOTFOUND): getaddrinfo \S+ some\.test\.name`).MatchString(got) {
			t.Errorf("fetch without allow_net = %q (isError %v), want a failure to resolve some.test.name", got, isErr)
		}
		awaitLog(t, c.stderr, regexp.MustCompile(`\[WARN\] .*a tool call failed for a reason the operator can fix: .*tool=fetch .*`+
			`next_step="add allow_net = \[\\"some\.test\.name:`+w.port+`\\"\] \(or \\"all\\"\) to plugin \\"fetch\\" in the sandbox block`), 30*time.Second)
	})
	if t.Failed() {
		return
	}

	// The user adds the allow_net the log named to fetch's plugin block,
	// where import's comment says.
	edited := strings.Replace(string(cfg), string(fetchBlock[0]),
		strings.Replace(string(fetchBlock[0]), commented, fmt.Sprintf("    allow_net = [\"some.test.name:%s\"]", w.port), 1), 1)
	if edited == string(cfg) {
		t.Fatal("the configuration did not change")
	}
	writeFile(config, edited)

	t.Run("with allow_net", func(t *testing.T) {
		start := time.Now()
		c := serve(t)
		for _, tool := range []string{"list_directory", "read_graph", "fetch"} {
			c.awaitTool(t, tool)
		}
		t.Logf("tools listed %s after plughost serve started (installed already)", time.Since(start).Round(100*time.Millisecond))
		if got, isErr := callTool(t, c, "fetch", nil); isErr || got != "hello from some.test.name:"+w.port {
			t.Errorf("fetch %s with allow_net = %q (isError %v), want the page", page, got, isErr)
		}
		if got, isErr := callTool(t, c, "read_graph", nil); isErr || !strings.Contains(got, "met on first contact") {
			t.Errorf("read_graph at the second start = %q (isError %v)", got, isErr)
		}
		if got, isErr := callTool(t, c, "list_directory", map[string]any{"path": docs}); isErr || !strings.Contains(got, "[FILE] note.txt") {
			t.Errorf("list_directory %s at the second start = %q (isError %v)", docs, got, isErr)
		}
		if strings.Contains(c.stderr.String(), "installing") {
			t.Errorf("the second start installed again:\n%s", c.stderr)
		}
		if again := reg.Requests(); len(again) != len(asked) {
			t.Errorf("the second start asked the registry: %q", again[len(asked):])
		}
	})
	t.Logf("TestFirstContact: %s in all; the world (Verdaccio, %d packages mirrored from %s, the fetch server published) %s; first start %s",
		time.Since(began).Round(100*time.Millisecond), len(mirrored), lockfile, worldReady.Round(100*time.Millisecond), firstStart.Round(100*time.Millisecond))
}

// awaitInstall waits, up to d, for the log to say that pkg (name@version)
// was installed, and fails at once when it says an install failed; the
// install must have been announced, with its size when sized.
func awaitInstall(t *testing.T, b *lineBuffer, pkg string, sized bool, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		b.mu.Lock()
		log, changed := b.buf.String(), b.changed
		b.mu.Unlock()
		if strings.Contains(log, "installed "+pkg+" in ") {
			// Announced, with the size the registry gives (npm view's
			// dist.unpackedSize): "installing NAME@VERSION (31.9 kB)…".
			announced := `installing ` + regexp.QuoteMeta(pkg) + `…`
			if sized {
				announced = `installing ` + regexp.QuoteMeta(pkg) + ` \([0-9.]+ [kM]?B\)…`
			}
			if !regexp.MustCompile(announced).MatchString(log) {
				t.Errorf("the install of %s was not announced (%s):\n%s", pkg, announced, log)
			}
			return
		}
		if strings.Contains(log, "cannot resolve") || strings.Contains(log, "cannot install") {
			t.Fatalf("an install failed:\n%s", log)
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%s was not installed within %s:\n%s", pkg, d, log)
		}
	}
}

// awaitLog waits, up to d, for a line of the log to match re.
func awaitLog(t *testing.T, b *lineBuffer, re *regexp.Regexp, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		b.mu.Lock()
		log, changed := b.buf.String(), b.changed
		b.mu.Unlock()
		if re.MatchString(log) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the log never matched %s:\n%s", re, log)
		}
	}
}

// lockIntegrity is the integrity an npm lockfile records for the package
// at path in its tree.
func lockIntegrity(t *testing.T, lockfile, path string) string {
	t.Helper()
	b, err := os.ReadFile(lockfile)
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Packages map[string]struct{ Integrity string } `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		t.Fatal(err)
	}
	if lock.Packages[path].Integrity == "" {
		t.Fatalf("%s has no integrity for %s", lockfile, path)
	}
	return lock.Packages[path].Integrity
}
