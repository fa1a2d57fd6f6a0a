//go:build unix

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/internal/registrytest"
)

// helloBundle packs, with the real mcpb CLI, a python bundle "hello" of
// version: its server greets the user_config value who (hello_py), and
// says goodbye too (goodbye_py) when goodbye is set; its manifest lists
// the tools it serves, and moreConfig (",KEY: {…}") adds to its
// user_config.
func helloBundle(t *testing.T, version string, goodbye bool, moreConfig string) []byte {
	t.Helper()
	py, tools := helloPy, `[{"name": "hello_py"}]`
	if goodbye {
		py = strings.Replace(py, `"inputSchema": {"type": "object"}}]}`,
			`"inputSchema": {"type": "object"}}, {"name": "goodbye_py", "description": "Says goodbye", "inputSchema": {"type": "object"}}]}`, 1)
		tools = `[{"name": "hello_py"}, {"name": "goodbye_py"}]`
	}
	return packHello(t, helloManifest(version, tools, moreConfig), py+"\nmain()\n")
}

// helloManifest is the manifest of helloBundle's bundle.
func helloManifest(version, tools, moreConfig string) string {
	return `{"manifest_version": "0.3", "name": "hello", "version": "` + version + `", "description": "d", "author": {"name": "a"},
  "user_config": {"who": {"type": "string", "title": "Who", "description": "whom to greet", "default": "bundle"}` + moreConfig + `},
  "compatibility": {"platforms": ["linux", "darwin"], "runtimes": {"python": ">=3.8"}}, "tools": ` + tools + `,
  "server": {"type": "python", "entry_point": "server/lib/hello_mcp/__main__.py", "mcp_config": {"command": "python3",
  "args": ["-m", "hello_mcp", "${user_config.who}"], "env": {"PYTHONPATH": "${__dirname}/server/lib"}}}}`
}

// packHello packs manifest and the python module main and returns the
// bundle's bytes.
func packHello(t *testing.T, manifest, main string) []byte {
	t.Helper()
	b, err := os.ReadFile(packBundle(t, manifest, map[string]string{"server/lib/hello_mcp/__main__.py": main}))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bundleFiles serves bundles on loopback, each at URL/NAME.
type bundleFiles struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
}

// startBundleFiles starts an empty bundleFiles, closed when t ends.
func startBundleFiles(t *testing.T) *bundleFiles {
	f := &bundleFiles{files: map[string][]byte{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		b, ok := f.files[strings.TrimPrefix(r.URL.Path, "/")]
		f.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(f.Close)
	return f
}

// add serves body at URL/name and returns that URL.
func (f *bundleFiles) add(name string, body []byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[name] = body
	return f.URL + "/" + name
}

// sum is the SHA-256 of b.
func sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// mcpbEntry is the server.json of version of io.example/hello-bundle,
// an mcpb package at url whose fileSha256 is sum.
func mcpbEntry(t *testing.T, version, url string, sum []byte) []byte {
	return []byte(serverJSON(t, "io.example/hello-bundle", version, map[string]any{"packages": []any{
		map[string]any{"registryType": "mcpb", "identifier": url, "version": version,
			"fileSha256": hex.EncodeToString(sum), "transport": map[string]any{"type": "stdio"}},
	}}))
}

// TestUpgradeRegistryBundle: a bundle installed from an mcpb entry of the
// official registry is upgraded to the registry's latest version: its
// bundle downloaded, checked and unpacked beside the old one, the value
// given at install kept, the definitions' diff shown (the tool 1.1.0
// adds), and serve runs 1.1.0. A 1.2.0 whose fileSha256 is wrong is
// refused, and so is a 1.3.0 whose server does not start: the 1.1.0
// declaration stays byte for byte, nothing of theirs is left under
// STATE/bundles/hello, and 1.1.0 still serves. A bundle installed from a file is refused
// with how to install the new file.
func TestUpgradeRegistryBundle(t *testing.T) {
	t.Parallel()
	files := startBundleFiles(t)
	v1, v11, v12 := helloBundle(t, "1.0.0", false, ""), helloBundle(t, "1.1.0", true, ""), helloBundle(t, "1.2.0", true, "")
	reg := registrytest.Start(t, mcpbEntry(t, "1.0.0", files.add("hello-1.0.0.mcpb", v1), sum(v1)))
	plugins, state := t.TempDir(), t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state}
	out, code := plughostIn(t, "", env, "install", "io.example/hello-bundle", "--registry", reg.URL, "--plugins", plugins, "--config-out", "-",
		"--name", "hello", "--yes", "--set", "who=ada")
	if code != 0 {
		t.Fatalf("plughost install (exit %d):\n%s", code, out)
	}
	declPath := filepath.Join(plugins, "hello"+declared.Suffix)

	reg.Publish(t, mcpbEntry(t, "1.1.0", files.add("hello-1.1.0.mcpb", v11), sum(v11)))
	out, code = plughostIn(t, "", env, "upgrade", "hello", "--plugins", plugins)
	if code != 0 || !strings.Contains(out, "hello: io.example/hello-bundle 1.0.0 → 1.1.0") || !strings.Contains(out, "added tool goodbye_py") ||
		!strings.Contains(out, "unpacked the new bundle in "+filepath.Join(state, "plughost", "bundles", "hello", hex.EncodeToString(sum(v11)))) {
		t.Fatalf("plughost upgrade (exit %d):\n%s", code, out)
	}
	t.Logf("plughost upgrade:\n%s", out)
	d, err := declared.Load(declPath)
	if err != nil || d.Origin.Version != "1.1.0" || d.BundleSHA256 != hex.EncodeToString(sum(v11)) || d.UserConfig["who"] != "ada" {
		t.Fatalf("the declaration after the upgrade (%v): %+v", err, d)
	}
	upgraded, _ := os.ReadFile(declPath)
	bundles := filepath.Join(state, "plughost", "bundles", "hello")
	left, _ := os.ReadDir(bundles)

	reg.Publish(t, mcpbEntry(t, "1.2.0", files.add("hello-1.2.0.mcpb", v12), sum(v11))) // the digest of another file
	out, code = plughostIn(t, "", env, "upgrade", "hello", "--plugins", plugins)
	if code == 0 || !strings.Contains(out, "the old version stays") || !strings.Contains(out, "digest mismatch") {
		t.Fatalf("plughost upgrade to a bundle of a wrong fileSha256 (exit %d):\n%s", code, out)
	}
	if now, _ := os.ReadFile(declPath); string(now) != string(upgraded) {
		t.Fatalf("the declaration after a failed upgrade:\n%s\nwas:\n%s", now, upgraded)
	}
	if now, _ := os.ReadDir(bundles); !slices.EqualFunc(now, left, func(a, b os.DirEntry) bool { return a.Name() == b.Name() }) {
		t.Fatalf("bundles after a failed upgrade: %v, were %v", now, left)
	}
	// 1.3.0's server exits at once: its bundle is unpacked, the
	// declaration names it, it does not start, and all of it is undone.
	v13 := packHello(t, helloManifest("1.3.0", `[{"name": "hello_py"}]`, ""), "import sys\nsys.exit(3)\n")
	reg.Publish(t, mcpbEntry(t, "1.3.0", files.add("hello-1.3.0.mcpb", v13), sum(v13)))
	out, code = plughostIn(t, "", env, "upgrade", "hello", "--plugins", plugins)
	if code == 0 || !strings.Contains(out, "the old version stays") || !strings.Contains(out, "did not start") {
		t.Fatalf("plughost upgrade to a server that does not start (exit %d):\n%s", code, out)
	}
	if now, _ := os.ReadFile(declPath); string(now) != string(upgraded) {
		t.Fatalf("the declaration after a failed start:\n%s\nwas:\n%s", now, upgraded)
	}
	if now, _ := os.ReadDir(bundles); !slices.EqualFunc(now, left, func(a, b os.DirEntry) bool { return a.Name() == b.Name() }) {
		t.Fatalf("bundles after a failed start: %v, were %v", now, left)
	}
	c := serveWrappedStdio(t, plugins, "", env...)
	c.awaitTool(t, "goodbye_py")
	if got := c.call(t, "hello_py", nil); got != "hello ada from python" {
		t.Fatalf("hello_py after the upgrade = %q", got)
	}

	// The same bundle installed from its file: no registry to ask.
	bundle := filepath.Join(t.TempDir(), "hello.mcpb")
	os.WriteFile(bundle, v1, 0o644)
	if out, code := plughostIn(t, "", env, "install", bundle, "--plugins", plugins, "--config-out", "-", "--name", "local", "--yes"); code != 0 {
		t.Fatalf("plughost install of the file (exit %d):\n%s", code, out)
	}
	out, code = plughostIn(t, "", env, "upgrade", "local", "--plugins", plugins)
	if code == 0 || !strings.Contains(out, "plughost install --force ./new.mcpb --name local") {
		t.Fatalf("plughost upgrade of a bundle installed from a file (exit %d):\n%s", code, out)
	}
}

// TestUpgradeRegistryBundlePinned: in trust mode pinned, a version whose
// manifest asks for a new required user_config is refused, saying to
// install it again; a version that asks for the same is unpacked and
// named, and held until plughost approve, then served.
func TestUpgradeRegistryBundlePinned(t *testing.T) {
	t.Parallel()
	files := startBundleFiles(t)
	v1 := helloBundle(t, "1.0.0", false, "")
	v11 := helloBundle(t, "1.1.0", true, `, "token": {"type": "string", "title": "Token", "description": "d", "required": true, "sensitive": true}`)
	v12 := helloBundle(t, "1.2.0", true, "")
	reg := registrytest.Start(t, mcpbEntry(t, "1.0.0", files.add("hello-1.0.0.mcpb", v1), sum(v1)))
	plugins, state := t.TempDir(), t.TempDir()
	config := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(config, []byte("trust {\n  mode = \"pinned\"\n  file = \"trust.json\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_STATE_HOME=" + state}
	run := func(args ...string) (string, int) {
		return plughostIn(t, "", env, append(args, "--plugins", plugins, "--config", config)...)
	}
	if out, code := run("install", "io.example/hello-bundle", "--registry", reg.URL, "--name", "hello", "--yes", "--set", "who=ada"); code != 0 {
		t.Fatalf("plughost install (exit %d):\n%s", code, out)
	}
	if out, code := run("approve", "hello"); code != 0 {
		t.Fatalf("plughost approve (exit %d):\n%s", code, out)
	}
	declPath := filepath.Join(plugins, "hello"+declared.Suffix)
	installed, _ := os.ReadFile(declPath)

	reg.Publish(t, mcpbEntry(t, "1.1.0", files.add("hello-1.1.0.mcpb", v11), sum(v11)))
	out, code := run("upgrade", "hello")
	if code == 0 || !strings.Contains(out, "token is new and required") || !strings.Contains(out, "plughost install --force io.example/hello-bundle@1.1.0") {
		t.Fatalf("plughost upgrade to a version asking for a new value (exit %d):\n%s", code, out)
	}
	if now, _ := os.ReadFile(declPath); string(now) != string(installed) {
		t.Fatalf("the declaration after a refused upgrade:\n%s", now)
	}

	reg.Publish(t, mcpbEntry(t, "1.2.0", files.add("hello-1.2.0.mcpb", v12), sum(v12)))
	out, code = run("upgrade", "hello")
	if code != 0 || !strings.Contains(out, "added tool goodbye_py") || !strings.Contains(out, "held until approved (plughost approve hello --digest") {
		t.Fatalf("plughost upgrade (exit %d):\n%s", code, out)
	}
	if out, _ := run("plugins"); !strings.Contains(out, "changed since approval") {
		t.Fatalf("plughost plugins after the upgrade:\n%s", out)
	}
	if out, code := run("approve", "hello"); code != 0 {
		t.Fatalf("plughost approve of 1.2.0 (exit %d):\n%s", code, out)
	}
	c := serveWrappedStdio(t, plugins, config, env...)
	c.awaitTool(t, "goodbye_py")
	if got := c.call(t, "hello_py", nil); got != "hello ada from python" {
		t.Fatalf("hello_py after the upgrade = %q", got)
	}
}
