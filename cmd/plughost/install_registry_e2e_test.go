//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/internal/npmregistry"
	"github.com/plughost/plughost/internal/registrytest"
)

// plughost install of MCP Registry entries: a registry answering API
// v0.1 with server.json documents, npm packages from Verdaccio.

// registryAPI serves the API v0.1 routes of a registry holding docs
// (server.json documents; of a name, the last is its latest), as the
// official registry answers them:
// GET /v0.1/servers/{name}/versions/{version|latest} and
// GET /v0.1/servers?search=.
func registryAPI(t *testing.T, docs ...string) *httptest.Server {
	t.Helper()
	type doc struct {
		name, version, wrapped string
	}
	var all []doc
	for _, d := range docs {
		var s struct{ Name, Version string }
		if err := json.Unmarshal([]byte(d), &s); err != nil {
			t.Fatal(err)
		}
		all = append(all, doc{s.Name, s.Version, fmt.Sprintf(`{"server":%s,"_meta":{"io.modelcontextprotocol.registry/official":{"status":"active","isLatest":true}}}`, d)})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v0.1/servers/{name}/versions/{version}", func(w http.ResponseWriter, r *http.Request) {
		for _, d := range slices.Backward(all) { // the last of a name is its latest
			if d.name == r.PathValue("name") && (r.PathValue("version") == "latest" || r.PathValue("version") == d.version) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, d.wrapped)
				return
			}
		}
		http.Error(w, `{"title":"Not Found","status":404,"detail":"Server not found"}`, http.StatusNotFound)
	})
	mux.HandleFunc("GET /v0.1/servers", func(w http.ResponseWriter, r *http.Request) {
		var items []string
		for _, d := range all {
			if strings.Contains(d.name, r.URL.Query().Get("search")) {
				items = append(items, d.wrapped)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"servers":[%s],"metadata":{"count":%d}}`, strings.Join(items, ","), len(items))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// serverJSON is a server.json document of schema 2025-12-11 named name,
// with the members given (packages, remotes).
func serverJSON(t *testing.T, name, version string, members map[string]any) string {
	t.Helper()
	d := map[string]any{"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
		"name": name, "version": version, "description": "A server for the install tests"}
	for k, v := range members {
		d[k] = v
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// plughostIn runs a plughost command with stdin and env (NAME=value
// entries, added last), and returns its output and exit code.
func plughostIn(t *testing.T, stdin string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin.plughost, args...)
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir()), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("plughost %s: %v", strings.Join(args, " "), err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// written lists what a directory holds, nil for a missing one.
func written(dir string) []string {
	des, _ := os.ReadDir(dir)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// TestInstallRegistryNPM: the real server-memory, published to
// Verdaccio, is an entry of the official registry (internal/registrytest); plughost install shows what it
// runs, asks for its secret (piped), installs the exact version once,
// writes the declaration (origin, env_files, no secret), the secret file
// (0600) and the plugin block (runtime, allow_read of the secret). In
// trust mode pinned it waits for plughost approve, which shows its
// definitions; plughost serve then lists and calls its tools, and again
// with Verdaccio stopped (offline). plughost uninstall removes it all.
func TestInstallRegistryNPM(t *testing.T) {
	t.Parallel()
	node, err := filepath.Abs(nodeBin)
	if err != nil {
		t.Fatal(err)
	}
	reg, stopReg, err := npmregistry.Run(node, &npmregistry.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stopVerdaccio := func() { once.Do(stopReg) }
	t.Cleanup(stopVerdaccio)
	lockfile := filepath.Join("..", "..", "conformance", "package-lock.json")
	reg.Mirror(t, lockfile, "@modelcontextprotocol/server-memory")
	const version = "2026.8.31" // conformance/package-lock.json's
	doc := serverJSON(t, "io.github.example/memory", "1.0.0", map[string]any{"packages": []any{
		map[string]any{"registryType": "oci", "identifier": "docker.io/mcp/memory:1.0.0", "transport": map[string]any{"type": "stdio"}},
		map[string]any{"registryType": "npm", "registryBaseUrl": reg.URL, "identifier": "@modelcontextprotocol/server-memory", "version": version,
			"transport": map[string]any{"type": "stdio"},
			"environmentVariables": []any{
				map[string]any{"name": "MEMORY_FILE_PATH", "description": "where the graph is kept", "default": "${HOME}/memory.jsonl"},
				map[string]any{"name": "MEMORY_TOKEN", "description": "a token", "isSecret": true, "isRequired": true},
			}},
	}})
	api := registrytest.Start(t, []byte(doc)) // the official registry, on PostgreSQL
	dir, state := t.TempDir(), t.TempDir()
	cfg := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(cfg, []byte("trust {\n  mode = \"pinned\"\n  file = \"trust.json\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_STATE_HOME=" + state, "npm_config_registry=" + reg.URL}

	out, code := plughostIn(t, "\ntok-123\nyes\n", env, "install", "io.github.example/memory", "--registry", api.URL, "--plugins", dir, "--config", cfg)
	for _, want := range []string{
		"package:   npm @modelcontextprotocol/server-memory " + version + " from " + reg.URL,
		"runs:      npx -y @modelcontextprotocol/server-memory@" + version,
		"env:       MEMORY_TOKEN = (secret",
		"also offered: oci docker.io/mcp/memory:1.0.0: not supported: an OCI image needs a container runtime",
		"installed @modelcontextprotocol/server-memory@" + version + " into " + filepath.Join(state, "plughost", "packages", "memory"),
		"added its plugin block to " + cfg,
		"it waits for plughost approve memory",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("plughost install (exit %d) does not say %q:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, "tok-123") {
		t.Errorf("install printed the secret:\n%s", out)
	}
	declPath := filepath.Join(dir, "memory"+declared.Suffix)
	raw, err := os.ReadFile(declPath)
	if err != nil {
		t.Fatal(err)
	}
	d, err := declared.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(state, "plughost", "secrets", "memory", "memory_token")
	if strings.Contains(string(raw), "tok-123") || d.EnvFiles["MEMORY_TOKEN"] != secret || d.Env["MEMORY_FILE_PATH"] != "${HOME}/memory.jsonl" ||
		d.Origin == nil || d.Origin.Name != "io.github.example/memory" || d.Origin.Version != "1.0.0" || d.Origin.Type != "npm" || d.Origin.Registry != api.URL {
		t.Fatalf("the declaration:\n%s", raw)
	}
	if st, err := os.Stat(secret); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the secret file: %v %v", st, err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "tok-123\n" {
		t.Fatalf("the secret file holds %q", b)
	}
	conf, _ := os.ReadFile(cfg)
	if !strings.Contains(string(conf), `plugin "memory" {`) || !strings.Contains(string(conf), `runtime = "node"`) || !strings.Contains(string(conf), secret) {
		t.Fatalf("the configuration:\n%s", conf)
	}

	out, code = plughostIn(t, "", env, "search-registry", "memory", "--registry", api.URL)
	if code != 0 || !strings.Contains(out, "io.github.example/memory 1.0.0\n  A server for the install tests\n  offers: oci (not supported), npm\n") {
		t.Fatalf("plughost search-registry (exit %d):\n%s", code, out)
	}

	// Pinned: approve shows its definitions, and installs nothing again.
	asked := len(reg.Requests())
	out, code = plughostIn(t, "", env, "approve", "memory", "--plugins", dir, "--config", cfg)
	if code != 0 || !strings.Contains(out, "approved memory (") || !strings.Contains(out, "\n  tool create_entities\n") || strings.Contains(out, "installing") {
		t.Fatalf("plughost approve (exit %d):\n%s", code, out)
	}

	c := serveWrappedStdio(t, dir, cfg, env...)
	c.awaitTool(t, "create_entities")
	c.call(t, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "ada", "entityType": "person", "observations": []any{"wrote the first program"}}}})
	if got := c.call(t, "read_graph", nil); !strings.Contains(got, "wrote the first program") {
		t.Fatalf("read_graph = %q", got)
	}
	if strings.Contains(c.stderr.String(), "installing") {
		t.Errorf("serve installed again:\n%s", c.stderr)
	}
	c.cs.Close()
	if again := reg.Requests(); len(again) != asked {
		t.Errorf("approve or serve asked the npm registry: %q", again[asked:])
	}

	stopVerdaccio()
	c = serveWrappedStdio(t, dir, cfg, env...)
	c.awaitTool(t, "read_graph")
	if got := c.call(t, "read_graph", nil); !strings.Contains(got, "wrote the first program") {
		t.Fatalf("read_graph offline = %q", got)
	}
	c.cs.Close()

	out, code = plughostIn(t, "", env, "uninstall", "memory", "--plugins", dir, "--config", cfg)
	if code != 0 {
		t.Fatalf("plughost uninstall (exit %d):\n%s", code, out)
	}
	for _, gone := range []string{declPath, filepath.Join(state, "plughost", "packages", "memory"), filepath.Join(state, "plughost", "secrets", "memory")} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("uninstall left %s (%v):\n%s", gone, err, out)
		}
	}
	conf, _ = os.ReadFile(cfg)
	if strings.Contains(string(conf), `plugin "memory"`) || !strings.Contains(string(conf), `mode = "pinned"`) {
		t.Errorf("the configuration after uninstall:\n%s", conf)
	}
	if tr, _ := os.ReadFile(filepath.Join(filepath.Dir(cfg), "trust.json")); strings.Contains(string(tr), `"memory"`) {
		t.Errorf("the trust file after uninstall:\n%s", tr)
	}
}

// TestInstallRegistryRemote: a remote entry's secret header is asked,
// written to a file (not the declaration), granted with allow_read; the
// host sends it to the Streamable HTTP server, whose tools a client
// lists and calls through plughost.
func TestInstallRegistryRemote(t *testing.T) {
	t.Parallel()
	remote := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "note"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a note"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "k-42" || r.Header.Get("X-Tenant") != "acme" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	doc := serverJSON(t, "io.example/notes", "2.0.0", map[string]any{"remotes": []any{map[string]any{
		"type": "streamable-http", "url": srv.URL + "/{path}",
		"variables": map[string]any{"path": map[string]any{"description": "the endpoint", "default": "mcp"}},
		"headers": []any{
			map[string]any{"name": "X-Api-Key", "description": "your key", "isSecret": true, "isRequired": true},
			map[string]any{"name": "X-Tenant", "description": "your tenant", "isRequired": true},
		},
	}}})
	api := registryAPI(t, doc)
	dir, state := t.TempDir(), t.TempDir()
	cfg := filepath.Join(t.TempDir(), "plughost.hcl")
	env := []string{"XDG_STATE_HOME=" + state}
	out, code := plughostIn(t, "\nk-42\n", env, "install", "io.example/notes", "--registry", api.URL, "--plugins", dir, "--config-out", cfg,
		"--set", "X-Tenant=acme", "--yes")
	if code != 0 || !strings.Contains(out, "remote:    "+srv.URL+"/mcp (streamable-http)") || !strings.Contains(out, "header:    X-Api-Key = (secret") ||
		!strings.Contains(out, "header:    X-Tenant = acme") || strings.Contains(out, "k-42") {
		t.Fatalf("plughost install (exit %d):\n%s", code, out)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "notes"+declared.Suffix))
	d, err := declared.Parse(raw)
	keyFile := filepath.Join(state, "plughost", "secrets", "notes", "x-api-key")
	if err != nil || d.URL != srv.URL+"/mcp" || d.HeaderFiles["X-Api-Key"] != keyFile || d.Headers["X-Tenant"] != "acme" || strings.Contains(string(raw), "k-42") {
		t.Fatalf("the declaration (%v):\n%s", err, raw)
	}
	if conf, _ := os.ReadFile(cfg); !strings.Contains(string(conf), keyFile) {
		t.Fatalf("the configuration does not grant the key file:\n%s", conf)
	}
	c := serveWrappedStdio(t, dir, cfg, env...)
	c.awaitTool(t, "note")
	if got := c.call(t, "note", nil); got != "a note" {
		t.Fatalf("note = %q", got)
	}

	// A remote that answers 401 naming its resource metadata is declared
	// with "oauth": {}, and install says to log in.
	oauthSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/.well-known/oauth-protected-resource"`)
		http.Error(w, "log in first", http.StatusUnauthorized)
	}))
	t.Cleanup(oauthSrv.Close)
	api2 := registryAPI(t, serverJSON(t, "io.example/guarded", "1.0.0", map[string]any{"remotes": []any{map[string]any{"type": "streamable-http", "url": oauthSrv.URL + "/mcp"}}}))
	out, code = plughostIn(t, "", env, "install", "io.example/guarded", "--registry", api2.URL, "--plugins", dir, "--config-out", "-", "--yes")
	if code != 0 || !strings.Contains(out, "declared with \"oauth\": {}") || !strings.Contains(out, "next: plughost login guarded") {
		t.Fatalf("plughost install of an OAuth remote (exit %d):\n%s", code, out)
	}
	if d, err := declared.Load(filepath.Join(dir, "guarded"+declared.Suffix)); err != nil || d.OAuth == nil {
		t.Fatalf("the declaration of an OAuth remote: %+v %v", d, err)
	}

	// uninstall removes what install wrote, and refuses a declaration
	// written by hand.
	out, code = plughostIn(t, "", env, "uninstall", "notes", "--plugins", dir)
	if _, err := os.Stat(filepath.Dir(keyFile)); code != 0 || !os.IsNotExist(err) {
		t.Fatalf("plughost uninstall (exit %d, secrets %v):\n%s", code, err, out)
	}
	if conf, _ := os.ReadFile(cfg); strings.Contains(string(conf), `plugin "notes"`) {
		t.Fatalf("the plugin block stayed:\n%s", conf)
	}
	declare(t, dir, "byhand", map[string]any{"url": srv.URL + "/mcp"})
	out, code = plughostIn(t, "", env, "uninstall", "byhand", "--plugins", dir)
	if _, err := os.Stat(filepath.Join(dir, "byhand"+declared.Suffix)); code == 0 || err != nil || !strings.Contains(out, "was not installed by plughost install") {
		t.Fatalf("plughost uninstall of a declaration written by hand (exit %d, %v):\n%s", code, err, out)
	}
}

// TestInstallRegistryRefusals: each bad registry or entry is refused
// with its reason, and nothing is written: no declaration, no secret, no
// configuration file, no package cache.
func TestInstallRegistryRefusals(t *testing.T) {
	t.Parallel()
	ociOnly := serverJSON(t, "io.example/boxed", "1.0.0", map[string]any{"packages": []any{
		map[string]any{"registryType": "oci", "identifier": "docker.io/mcp/boxed:1.0.0", "transport": map[string]any{"type": "stdio"}},
		map[string]any{"registryType": "nuget", "identifier": "Boxed.Mcp", "version": "1.0.0", "transport": map[string]any{"type": "stdio"}},
	}})
	notOnNPM := serverJSON(t, "io.example/missing", "1.0.0", map[string]any{"packages": []any{
		map[string]any{"registryType": "npm", "identifier": "@plughost-test/does-not-exist", "version": "1.0.0", "transport": map[string]any{"type": "stdio"},
			"environmentVariables": []any{map[string]any{"name": "TOKEN", "isSecret": true, "default": "t"}}},
	}})
	api := registryAPI(t, ociOnly, notOnNPM)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>") }))
	t.Cleanup(garbage.Close)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	badDocs := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(badDocs, []byte(serverJSON(t, "boxed-without-namespace", "1.0.0", nil)), 0o644)

	for _, tc := range []struct{ name, registry, ref, want string }{
		{"oci and nuget only", api.URL, "io.example/boxed", "io.example/boxed@1.0.0 offers nothing plughost runs: oci docker.io/mcp/boxed:1.0.0 (an OCI image needs a container runtime"},
		{"unknown name", api.URL, "io.example/nothing", "io.example/nothing@latest: not found in " + api.URL},
		{"unknown version", api.URL, "io.example/boxed@9.9.9", "io.example/boxed@9.9.9: not found"},
		{"garbage", garbage.URL, "io.example/boxed", "not an API v0.1 answer"},
		{"down", downURL, "io.example/boxed", "connection refused"},
		{"schema", badDocs, "io.example/boxed", "document 1 does not follow the server.json schema 2025-12-11: at /name"},
		{"not on npm", api.URL, "io.example/missing", "installing @plughost-test/does-not-exist@1.0.0"},
		{"plain http", "http://registry.example.com", "io.example/boxed", "http only to a loopback address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, state := t.TempDir(), t.TempDir()
			cfg := filepath.Join(t.TempDir(), "plughost.hcl")
			out, code := plughostIn(t, "", []string{"XDG_STATE_HOME=" + state, "npm_config_registry=" + downURL, "npm_config_fetch_retries=0"},
				"install", tc.ref, "--registry", tc.registry, "--plugins", dir, "--config-out", cfg, "--yes")
			if code == 0 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want %q:\n%s", code, tc.want, out)
			}
			if got := written(dir); len(got) != 0 {
				t.Errorf("the plugin directory holds %v", got)
			}
			for _, sub := range []string{"packages", "secrets", "installed"} {
				if got := written(filepath.Join(state, "plughost", sub)); len(got) != 0 {
					t.Errorf("the state directory's %s holds %v", sub, got)
				}
			}
			if _, err := os.Stat(cfg); !os.IsNotExist(err) {
				t.Errorf("the configuration was written: %v", err)
			}
		})
	}
}

// TestSearchRegistry lists a registry's servers with what they offer.
func TestSearchRegistry(t *testing.T) {
	t.Parallel()
	api := registryAPI(t, serverJSON(t, "io.example/boxed", "1.0.0", map[string]any{"packages": []any{
		map[string]any{"registryType": "oci", "identifier": "docker.io/mcp/boxed:1.0.0", "transport": map[string]any{"type": "stdio"}},
	}, "remotes": []any{map[string]any{"type": "sse", "url": "https://boxed.example.com/sse"}}}))
	out, code := plughostIn(t, "", nil, "search-registry", "boxed", "--registry", api.URL)
	if code != 0 || !strings.Contains(out, "io.example/boxed 1.0.0\n  A server for the install tests\n  offers: oci (not supported), sse") {
		t.Fatalf("search-registry (exit %d):\n%s", code, out)
	}
}

// TestUpgradeRegistry: plughost upgrade of a server installed from a
// registry installs the registry's latest version beside the old one,
// keeps the values given, shows the definitions' diff and switches; a
// latest version that fails to install leaves the old declaration and
// package running.
func TestUpgradeRegistry(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t)
	publishHello(t, reg, "1.0.0")
	publishHello(t, reg, "1.1.0")
	hello := func(version string) string {
		return serverJSON(t, "io.example/hello", version, map[string]any{"packages": []any{
			map[string]any{"registryType": "npm", "identifier": "@acme/hello-mcp", "version": version, "transport": map[string]any{"type": "stdio"},
				"packageArguments": []any{map[string]any{"type": "positional", "valueHint": "who", "isRequired": true}}},
		}})
	}
	dir, state := t.TempDir(), t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state, "npm_config_registry=" + reg.URL, "npm_config_fetch_retries=0"}
	docs := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(docs, []byte("["+hello("1.0.0")+"]"), 0o644)
	out, code := plughostIn(t, "", env, "install", "io.example/hello", "--registry", docs, "--plugins", dir, "--config-out", "-", "--set", "who=ada", "--yes")
	if code != 0 {
		t.Fatalf("plughost install (exit %d):\n%s", code, out)
	}
	declPath := filepath.Join(dir, "hello"+declared.Suffix)
	before, _ := os.ReadFile(declPath)

	os.WriteFile(docs, []byte("["+hello("1.0.0")+","+hello("1.1.0")+"]"), 0o644)
	out, code = plughostIn(t, "", env, "upgrade", "hello", "--plugins", dir)
	if code != 0 || !strings.Contains(out, "hello: io.example/hello 1.0.0 → 1.1.0") || !strings.Contains(out, "installed @acme/hello-mcp@1.1.0 beside @acme/hello-mcp@1.0.0") ||
		!strings.Contains(out, "added tool goodbye") {
		t.Fatalf("plughost upgrade (exit %d):\n%s", code, out)
	}
	d, err := declared.Load(declPath)
	if err != nil || !slices.Contains(d.Args, "@acme/hello-mcp@1.1.0") || !slices.Contains(d.Args, "ada") || d.Origin.Version != "1.1.0" {
		t.Fatalf("the declaration after the upgrade (%v): %+v", err, d)
	}
	upgraded, _ := os.ReadFile(declPath)

	// 1.2.0 is in the registry but not on npm: the upgrade fails, 1.1.0 stays.
	os.WriteFile(docs, []byte("["+hello("1.0.0")+","+hello("1.1.0")+","+hello("1.2.0")+"]"), 0o644)
	out, code = plughostIn(t, "", env, "upgrade", "hello", "--plugins", dir)
	if code == 0 || !strings.Contains(out, "the old version stays") {
		t.Fatalf("plughost upgrade to a version npm does not have (exit %d):\n%s", code, out)
	}
	if now, _ := os.ReadFile(declPath); string(now) != string(upgraded) || string(now) == string(before) {
		t.Fatalf("the declaration after a failed upgrade:\n%s", now)
	}
	c := serveWrappedStdio(t, dir, "", env...)
	c.awaitTool(t, "goodbye")
	if got := c.call(t, "hello", nil); got != "hello ada from 1.1.0" {
		t.Fatalf("hello after a failed upgrade = %q", got)
	}
}

// TestInstallRegistryPyPI: a pypi entry (registryBaseUrl: the test's
// index, which PIP_INDEX_URL names) becomes `uvx hello-mcp==1.0.0 ARGS`,
// installed once by install itself: serve asks the index nothing.
func TestInstallRegistryPyPI(t *testing.T) {
	t.Parallel()
	if err := exec.Command("python3", "-m", "venv", "--help").Run(); err != nil {
		t.Fatalf("the uvx test needs python3 with venv (python3-venv): %v", err)
	}
	file, body := buildWheel(t, "hello-mcp", "1.0.0", map[string]string{"hello_mcp/__init__.py": "", "hello_mcp/server.py": helloPy},
		"hello-mcp", "hello_mcp.server:main")
	idx := serveIndex(t, "hello-mcp", map[string][]byte{file: body})
	doc := serverJSON(t, "io.example/hello-py", "1.0.0", map[string]any{"packages": []any{
		map[string]any{"registryType": "pypi", "registryBaseUrl": idx.URL, "identifier": "hello-mcp", "version": "1.0.0", "runtimeHint": "uvx",
			"transport": map[string]any{"type": "stdio"},
			"packageArguments": []any{
				map[string]any{"type": "named", "name": "--greeting", "description": "how to greet", "choices": []string{"hi", "hello"}, "isRequired": true},
				map[string]any{"type": "positional", "valueHint": "who", "default": "world"},
			}},
	}})
	docs := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(docs, []byte(doc), 0o644)
	dir, state := t.TempDir(), t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state, "PIP_INDEX_URL=" + idx.URL + "/simple/", "PIP_CERT="}
	out, code := plughostIn(t, "hi\n\n", env, "install", "io.example/hello-py", "--registry", docs, "--plugins", dir, "--config-out", "-", "--yes")
	if code != 0 || !strings.Contains(out, "runs:      uvx hello-mcp==1.0.0 --greeting=hi world") || !strings.Contains(out, "installed hello-mcp==1.0.0 into ") {
		t.Fatalf("plughost install (exit %d):\n%s", code, out)
	}
	asked := idx.count()
	c := serveWrappedStdio(t, dir, "", env...)
	c.awaitTool(t, "hello_py")
	if got := c.call(t, "hello_py", nil); got != "hello --greeting=hi world from python" {
		t.Fatalf("hello_py = %q", got)
	}
	if n := idx.count(); n != asked {
		t.Errorf("serve asked the index %d more times", n-asked)
	}
}

// TestInstallRegistryBundleDigest: an mcpb entry whose file is not the
// one its fileSha256 names is refused before anything is unpacked or
// written; --dry-run shows what would be done and writes nothing.
func TestInstallRegistryBundleDigest(t *testing.T) {
	t.Parallel()
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "PK\x03\x04 not the bundle named") }))
	t.Cleanup(files.Close)
	doc := serverJSON(t, "io.example/bundled", "1.0.0", map[string]any{"packages": []any{
		map[string]any{"registryType": "mcpb", "identifier": files.URL + "/bundled.mcpb", "version": "1.0.0",
			"fileSha256": strings.Repeat("ab", 32), "transport": map[string]any{"type": "stdio"}},
	}})
	docs := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(docs, []byte(doc), 0o644)
	dir, state := t.TempDir(), t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state}
	out, code := plughostIn(t, "", env, "install", "io.example/bundled", "--registry", docs, "--plugins", dir, "--config-out", "-", "--dry-run")
	if code != 0 || !strings.Contains(out, "bundle:    "+files.URL+"/bundled.mcpb") || !strings.Contains(out, "dry run: would download") {
		t.Fatalf("--dry-run (exit %d):\n%s", code, out)
	}
	out, code = plughostIn(t, "", env, "install", "io.example/bundled", "--registry", docs, "--plugins", dir, "--config-out", "-", "--yes")
	if code == 0 || !strings.Contains(out, "digest mismatch: its SHA-256 is ") || !strings.Contains(out, "nothing installed") {
		t.Fatalf("a wrong fileSha256 (exit %d):\n%s", code, out)
	}
	if got := written(dir); len(got) != 0 {
		t.Errorf("the plugin directory holds %v", got)
	}
	if got := written(filepath.Join(state, "plughost", "bundles")); len(got) != 0 {
		t.Errorf("bundles holds %v", got)
	}
}

// TestInstallRegistryPublic installs the official registry's entry of
// the memory server from the public registries: opt-in, it needs the
// network (PLUGHOST_TEST_PUBLIC_REGISTRY=1).
func TestInstallRegistryPublic(t *testing.T) {
	if os.Getenv("PLUGHOST_TEST_PUBLIC_REGISTRY") != "1" {
		t.Skip("set PLUGHOST_TEST_PUBLIC_REGISTRY=1 to install io.github.modelcontextprotocol/server-memory from " +
			"https://registry.modelcontextprotocol.io and the public npm registry")
	}
	t.Parallel()
	dir, state := t.TempDir(), t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state}
	out, code := plughostIn(t, "\n", env, "search-registry", "server-memory")
	if code != 0 || !strings.Contains(out, "io.github.modelcontextprotocol/server-memory ") {
		t.Fatalf("plughost search-registry (exit %d):\n%s", code, out)
	}
	out, code = plughostIn(t, "\n", env, "install", "io.github.modelcontextprotocol/server-memory", "--plugins", dir, "--config-out", "-", "--yes")
	if code != 0 || !strings.Contains(out, "installed @modelcontextprotocol/server-memory@") {
		t.Fatalf("plughost install (exit %d):\n%s", code, out)
	}
	c := serveWrappedStdio(t, dir, "", env...)
	c.awaitTool(t, "read_graph")
	c.call(t, "read_graph", nil)
}
