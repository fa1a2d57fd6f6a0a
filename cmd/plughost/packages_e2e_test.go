package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/internal/npmregistry"
)

// Install once, run offline: declared npx one-liners against a real npm
// registry (Verdaccio, internal/npmregistry) serving MCP servers this
// test publishes.

// helloServer is a small MCP stdio server written with node's built-ins
// only, published as @acme/hello-mcp: hello answers "hello ARGS from
// VERSION" (described "Says hello twice" from 1.1.0); reach tries a TCP connection to the host:port it is given and
// says "connected" or the error (inside a sandbox without network:
// ENETUNREACH, ECONNREFUSED). Version 1.1.0 also has a tool goodbye.
func helloServer(version string) map[string]string {
	extra, says := "", "Says hello"
	if version >= "1.1.0" {
		extra, says = `, {name: 'goodbye', description: 'Says goodbye', inputSchema: {type: 'object'}}`, "Says hello twice"
	}
	return map[string]string{"server.js": `#!/usr/bin/env node
const net = require('node:net');
const readline = require('node:readline');
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const text = (id, t) => send({jsonrpc: '2.0', id, result: {content: [{type: 'text', text: t}]}});
readline.createInterface({input: process.stdin}).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  switch (m.method) {
  case 'initialize':
    return send({jsonrpc: '2.0', id: m.id, result: {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: 'hello', version: '` + version + `'}}});
  case 'tools/list':
    return send({jsonrpc: '2.0', id: m.id, result: {tools: [
      {name: 'hello', description: '` + says + `', inputSchema: {type: 'object'}},
      {name: 'reach', description: 'Connects to host:port', inputSchema: {type: 'object', properties: {addr: {type: 'string'}}}}` + extra + `]}});
  case 'tools/call': {
    const a = m.params.arguments || {};
    if (m.params.name === 'reach') {
      const [host, port] = a.addr.split(':');
      const s = net.connect(Number(port), host);
      s.on('connect', () => { s.destroy(); text(m.id, 'connected'); });
      s.on('error', (e) => text(m.id, 'error ' + e.code));
      return;
    }
    return text(m.id, m.params.name + ' ' + process.argv.slice(2).join(' ') + ' from ` + version + `');
  }
  default:
    send({jsonrpc: '2.0', id: m.id, error: {code: -32601, message: 'no ' + m.method}});
  }
});
`}
}

// publishHello publishes @acme/hello-mcp at version to reg.
func publishHello(t *testing.T, reg *npmregistry.Registry, version string) {
	t.Helper()
	reg.Publish(t, npmregistry.Package{Name: "@acme/hello-mcp", Version: version, Bin: map[string]string{"hello-mcp": "server.js"},
		Files: helloServer(version)})
}

// startRegistry runs Verdaccio on the Node 22 of conformance/node_modules.
func startRegistry(t *testing.T) *npmregistry.Registry {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("the install-once tests need npm in PATH (to publish, and for plughost to install with): %v", err)
	}
	node, err := filepath.Abs(nodeBin)
	if err != nil {
		t.Fatal(err)
	}
	return npmregistry.Start(t, node)
}

// plughostWith runs a plughost command with env (NAME=value entries)
// added last, and returns stdout and stderr together and its exit code.
func plughostWith(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin.plughost, args...)
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir()), env...)
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("plughost %s: %v", strings.Join(args, " "), err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// TestPackageInstallOnce: a declared `npx -y @acme/hello-mcp@^1 world`
// is installed at its first start (the progress logged, npm asking the
// registry), runs from the installed tree, and at its second start is
// not installed again: the registry hears no request, and the server,
// granted no network, cannot reach the registry at all. A package the
// registry does not have fails with npm's own words.
func TestPackageInstallOnce(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t)
	publishHello(t, reg, "1.0.0")
	dir, state := t.TempDir(), t.TempDir()
	declare(t, dir, "hello", map[string]any{"command": "npx", "args": []string{"-y", "@acme/hello-mcp@^1", "world"}})
	env := []string{"XDG_STATE_HOME=" + state, "npm_config_registry=" + reg.URL}
	addr := strings.TrimSuffix(strings.TrimPrefix(reg.URL, "http://"), "/")

	c := serveWrappedStdio(t, dir, "", env...)
	c.stderr.awaitWithin(t, "installed @acme/hello-mcp@1.0.0 in ", installWait)
	c.awaitTool(t, "hello")
	if got := c.call(t, "hello", nil); got != "hello world from 1.0.0" {
		t.Fatalf("hello = %q", got)
	}
	c.stderr.await(t, "installing @acme/hello-mcp@1.0.0…")
	if !regexp.MustCompile(`installed @acme/hello-mcp@1\.0\.0 in [0-9.]+m?s: 1 package, [0-9.]+ k?B`).MatchString(c.stderr.String()) {
		t.Errorf("the install's end is not logged with its time and size:\n%s", c.stderr)
	}
	asked := reg.Requests()
	if len(asked) == 0 {
		t.Fatal("the first start installed without asking the registry")
	}
	c.cs.Close()

	c = serveWrappedStdio(t, dir, "", env...)
	c.awaitTool(t, "hello")
	if got := c.call(t, "hello", nil); got != "hello world from 1.0.0" {
		t.Fatalf("hello at the second start = %q", got)
	}
	if got := c.call(t, "reach", map[string]any{"addr": addr}); !strings.HasPrefix(got, "error ") {
		t.Errorf("the server reached the registry at %s (%q): it should have no network", addr, got)
	}
	if strings.Contains(c.stderr.String(), "installing") {
		t.Errorf("the second start installed again:\n%s", c.stderr)
	}
	if again := reg.Requests(); len(again) != len(asked) {
		t.Errorf("the second start asked the registry: %q", again[len(asked):])
	}
	c.cs.Close()

	// plughost plugins says which package and version the server runs.
	cmd := exec.Command(bin.plughost, "plugins", "--plugins", dir, "--json")
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir()), env...)
	js, err := cmd.Output()
	if err != nil {
		t.Fatalf("plughost plugins --json: %v\n%s", err, js)
	}
	var rep serve.Report
	if err := json.Unmarshal(js, &rep); err != nil || len(rep.Plugins) != 1 || rep.Plugins[0].Package == nil {
		t.Fatalf("plughost plugins --json (%v):\n%s", err, js)
	}
	today := time.Now().Format(time.DateOnly)
	if pk := rep.Plugins[0].Package; pk.Manager != "npm" || pk.Name != "@acme/hello-mcp" || pk.Version != "1.0.0" || pk.Declared != "^1" ||
		pk.InstalledAt.Local().Format(time.DateOnly) != today || pk.Summary != "@acme/hello-mcp@1.0.0" || !strings.HasPrefix(pk.Tree, state) {
		t.Errorf("plughost plugins --json: package %+v", pk)
	}

	declare(t, dir, "nope", map[string]any{"command": "npx", "args": []string{"-y", "@acme/nope"}})
	out, code := plughostWith(t, env, "plugins", "--plugins", dir)
	if code != 1 || !strings.Contains(out, "npm error 404 Not Found - GET "+reg.URL+"@acme%2fnope") {
		t.Fatalf("a package the registry does not have (exit %d):\n%s", code, out)
	}
	if want := "  package: @acme/hello-mcp@1.0.0 (installed " + today + ")\n"; !strings.Contains(out, want) {
		t.Errorf("plughost plugins does not show %q:\n%s", want, out)
	}
}

// TestPackagePinned: in trust mode pinned, plughost approve installs the
// declared package and approves its installed tree; the server then runs;
// a tree changed after its approval is quarantined (changed), the
// declaration itself untouched. plughost upgrade installs the newest
// version the range allows, shows old → new and the definitions' diff
// against the approved ones, and the new tree is held until approved.
func TestPackagePinned(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t)
	publishHello(t, reg, "1.0.0")
	dir, state := t.TempDir(), t.TempDir()
	declare(t, dir, "hello", map[string]any{"command": "npx", "args": []string{"-y", "@acme/hello-mcp@^1", "pinned"}})
	config := filepath.Join(state, "plughost.hcl")
	if err := os.WriteFile(config, []byte("trust {\n  mode = \"pinned\"\n  file = \"trust.json\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_STATE_HOME=" + state, "npm_config_registry=" + reg.URL}

	out, code := plughostWith(t, env, "approve", "hello", "--plugins", dir, "--config", config)
	if code != 0 || !strings.Contains(out, "installing @acme/hello-mcp@1.0.0…") || !strings.Contains(out, "approved hello (") ||
		!strings.Contains(out, "pinned 2 definitions") {
		t.Fatalf("plughost approve (exit %d):\n%s", code, out)
	}
	c := serveWrappedStdio(t, dir, config, env...)
	c.awaitTool(t, "hello")
	if got := c.call(t, "hello", nil); got != "hello pinned from 1.0.0" {
		t.Fatalf("hello = %q", got)
	}
	c.cs.Close()

	entry := filepath.Join(state, "plughost", "packages", "hello", "trees", "@acme+hello-mcp@1.0.0", "node_modules", "@acme", "hello-mcp", "server.js")
	f, err := os.OpenFile(entry, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n// changed after approval\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	quarantined := regexp.MustCompile(`(?m)^hello +quarantined +changed since approval`)
	out, code = plughostWith(t, env, "plugins", "--plugins", dir, "--config", config)
	if code != 1 || !quarantined.MatchString(out) {
		t.Fatalf("plughost plugins after the installed tree changed (exit %d):\n%s", code, out)
	}

	publishHello(t, reg, "1.1.0")
	out, code = plughostWith(t, env, "upgrade", "hello", "--plugins", dir, "--config", config)
	for _, want := range []string{"hello: @acme/hello-mcp 1.0.0 → 1.1.0\n", "  added tool goodbye\n", "  changed tool hello\n",
		"    description: Says hello {+twice+}\n", `hello is in trust mode "pinned": it is held until approved (plughost approve hello --digest sha256:`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("plughost upgrade (exit %d) does not say %q:\n%s", code, want, out)
		}
	}
	out, code = plughostWith(t, env, "plugins", "--plugins", dir, "--config", config)
	if code != 1 || !quarantined.MatchString(out) {
		t.Fatalf("plughost plugins after the upgrade, before its approval (exit %d):\n%s", code, out)
	}
	if out, code = plughostWith(t, env, "approve", "hello", "--plugins", dir, "--config", config); code != 0 {
		t.Fatalf("plughost approve after the upgrade (exit %d):\n%s", code, out)
	}
	c = serveWrappedStdio(t, dir, config, env...)
	c.awaitTool(t, "goodbye")
	if got := c.call(t, "hello", nil); got != "hello pinned from 1.1.0" {
		t.Fatalf("hello after the upgrade = %q", got)
	}
}

// TestPackagePublicNPM (opt-in: PLUGHOST_TEST_PUBLIC_NPM=1) installs the
// memory reference server, pinned, from the public npm registry through
// this machine's resolver and CA store, as a desktop user's first start
// would, and calls it; its second start is offline.
func TestPackagePublicNPM(t *testing.T) {
	if os.Getenv("PLUGHOST_TEST_PUBLIC_NPM") != "1" {
		t.Skip("set PLUGHOST_TEST_PUBLIC_NPM=1 to install @modelcontextprotocol/server-memory@2026.8.31 from the public npm registry")
	}
	t.Parallel()
	dir, state := t.TempDir(), t.TempDir()
	declare(t, dir, "memory", map[string]any{"command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-memory@2026.8.31"},
		"env": map[string]string{"MEMORY_FILE_PATH": "${HOME}/memory.jsonl"}})
	env := []string{"XDG_STATE_HOME=" + state}
	c := serveWrappedStdio(t, dir, "", env...)
	// 99 packages, 17.5 MB: longer than lineBuffer.await waits.
	deadline := time.After(5 * time.Minute)
	for {
		c.stderr.mu.Lock()
		log, changed := c.stderr.buf.String(), c.stderr.changed
		c.stderr.mu.Unlock()
		if strings.Contains(log, "installed @modelcontextprotocol/server-memory@2026.8.31 in ") {
			break
		}
		if strings.Contains(log, "cannot resolve") || strings.Contains(log, "cannot install") {
			t.Fatalf("the install failed:\n%s", log)
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the install did not end in 5 minutes:\n%s", log)
		}
	}
	c.awaitTool(t, "read_graph")
	c.call(t, "read_graph", nil)
	c.cs.Close()

	c = serveWrappedStdio(t, dir, "", env...)
	c.awaitTool(t, "read_graph")
	c.call(t, "read_graph", nil)
	if strings.Contains(c.stderr.String(), "installing") {
		t.Errorf("the second start installed again:\n%s", c.stderr)
	}
}
