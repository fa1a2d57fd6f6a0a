package main

import (
	"archive/zip"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/internal/mcpbcli"
)

// MCP Bundles built by the real mcpb CLI (@anthropic-ai/mcpb 2.1.2,
// internal/mcpbcli) from the filesystem reference server, installed with
// plughost install or dropped into the plugin directory, and called by
// the go-sdk client through plughost serve.

// filesystemTools are the tools server-filesystem lists: what the
// bundle's manifest declares.
var filesystemTools = []string{"read_file", "read_text_file", "read_media_file", "read_multiple_files", "write_file", "edit_file",
	"create_directory", "list_directory", "list_directory_with_sizes", "directory_tree", "move_file", "search_files",
	"get_file_info", "list_allowed_directories"}

// fsEntry is the server's entry point inside the bundle.
const fsEntry = "server/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

// buildFilesystemBundle makes a bundle of server-filesystem as an author
// would: its package and production dependencies copied from
// conformance/node_modules into server/node_modules, `mcpb init --yes`
// writing manifest.json from package.json, the manifest given the
// server's user_config (allowed_directories, several directories,
// defaulting to ${HOME}), its tools and compatibility, `mcpb validate`,
// then `mcpb pack`. edit, when not nil, changes the manifest further.
func buildFilesystemBundle(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "fs-bundle")
	top, err := filepath.Abs(filepath.Join("..", "..", "conformance", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	copyNodeClosure(t, top, "@modelcontextprotocol/server-filesystem", filepath.Join(src, "server", "node_modules"))
	pkg := `{"name": "fs-bundle", "version": "1.0.0", "description": "The filesystem reference server, bundled", "main": "` + fsEntry + `", "author": "plughost tests"}`
	if err := os.WriteFile(filepath.Join(src, "package.json"), []byte(pkg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := mcpbcli.Run(t, "init", "--yes", src); err != nil {
		t.Fatalf("mcpb init: %v\n%s", err, out)
	}
	path := filepath.Join(src, "manifest.json")
	var m map[string]any
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	server := m["server"].(map[string]any)
	server["mcp_config"].(map[string]any)["args"] = []string{"${__dirname}/" + fsEntry, "${user_config.allowed_directories}"}
	m["user_config"] = map[string]any{"allowed_directories": map[string]any{"type": "directory", "title": "Allowed directories",
		"description": "The directories the server may read and write", "multiple": true, "default": []string{"${HOME}"}}}
	var tools []map[string]string
	for _, n := range filesystemTools {
		tools = append(tools, map[string]string{"name": n})
	}
	m["tools"] = tools
	m["compatibility"] = map[string]any{"platforms": []string{"linux", "darwin"}, "runtimes": map[string]string{"node": ">=18.0.0"}}
	if edit != nil {
		edit(m)
	}
	if b, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := mcpbcli.Run(t, "validate", path); err != nil {
		t.Fatalf("mcpb validate: %v\n%s", err, out)
	}
	bundle := filepath.Join(t.TempDir(), "fs.mcpb")
	if out, err := mcpbcli.Run(t, "pack", src, bundle); err != nil {
		t.Fatalf("mcpb pack: %v\n%s", err, out)
	}
	st, err := os.Stat(bundle)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bundle %s: %d bytes", bundle, st.Size())
	return bundle
}

// copyNodeClosure copies the package name and every package it depends
// on (dependencies, resolved as Node resolves them from top, a
// node_modules directory) into dst, mirroring their places under top.
// Symbolic links (node_modules/.bin) are left out.
func copyNodeClosure(t *testing.T, top, name, dst string) {
	t.Helper()
	seen := map[string]bool{}
	var visit func(from, dep string)
	visit = func(from, dep string) {
		dir := ""
		for d := from; strings.HasPrefix(d, top); d = filepath.Dir(d) {
			if c := filepath.Join(d, "node_modules", dep); d != top && isDir(c) {
				dir = c
				break
			}
		}
		if dir == "" {
			dir = filepath.Join(top, dep)
		}
		if seen[dir] {
			return
		}
		seen[dir] = true
		var pkg struct{ Dependencies map[string]string }
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err == nil {
			err = json.Unmarshal(b, &pkg)
		}
		if err != nil {
			t.Fatalf("package %s: %v", dep, err)
		}
		for d := range pkg.Dependencies {
			visit(dir, d)
		}
	}
	visit(top, name)
	for dir := range seen {
		rel, _ := filepath.Rel(top, dir)
		if strings.Contains(rel, string(filepath.Separator)+"node_modules"+string(filepath.Separator)) {
			continue // copied with the package holding it
		}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !d.Type().IsRegular() {
				return err
			}
			r, _ := filepath.Rel(top, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			info, _ := d.Info()
			if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(r)), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, r), b, info.Mode().Perm())
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// toolNames lists the tools served.
func (c *wrappedClient) toolNames(t *testing.T) []string {
	var out []string
	for tool, err := range c.cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	return out
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// TestBundleInstallAndServe: `plughost install ./fs.mcpb --set
// allowed_directories=DIR` unpacks the bundle mcpb packed, writes its
// declaration pinning its SHA-256 and a plugin block granting DIR; served,
// the go-sdk client lists the manifest's tools and lists DIR through the
// bundle's server, which refuses a directory outside it (and the sandbox
// grants it nothing else).
func TestBundleInstallAndServe(t *testing.T) {
	t.Parallel()
	bundle := buildFilesystemBundle(t, nil)
	plugins, stateHome := t.TempDir(), t.TempDir()
	granted, other := t.TempDir(), t.TempDir()
	if err := os.Chmod(granted, 0o777); err != nil { // as root, the server runs as uid 65534
		t.Fatal(err)
	}
	for dir, f := range map[string]string{granted: "hello.txt", other: "secret.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(t.TempDir(), "plughost.hcl")
	env := []string{"XDG_STATE_HOME=" + stateHome}
	out, code := plughostWith(t, env, "install", bundle, "--plugins", plugins, "--config-out", config, "--yes", "--set", "allowed_directories="+granted)
	if code != 0 {
		t.Fatalf("plughost install (exit %d):\n%s", code, out)
	}
	for _, want := range []string{`as "fs-bundle"`, "fs-bundle 1.0.0 (manifest 0.2)", "unsigned", "asks for:  allowed_directories (directory, several, comma-separated, granted read and write)",
		"allow_write = [\"" + granted + "\"]"} {
		if !strings.Contains(out, want) {
			t.Errorf("plughost install does not say %q:\n%s", want, out)
		}
	}
	var decl map[string]any
	b, err := os.ReadFile(filepath.Join(plugins, "fs-bundle.mcp.json"))
	if err == nil {
		err = json.Unmarshal(b, &decl)
	}
	if err != nil {
		t.Fatal(err)
	}
	if sha, _ := decl["bundle_sha256"].(string); len(sha) != 64 || !strings.HasPrefix(decl["bundle"].(string), filepath.Join(stateHome, "plughost", "bundles", "fs-bundle")) {
		t.Fatalf("declaration: %s", b)
	}

	c := serveWrappedStdio(t, plugins, config, env...)
	c.awaitTool(t, "list_directory")
	if listed := c.toolNames(t); len(listed) != len(filesystemTools) {
		t.Errorf("listed %v, the manifest declares %v", listed, filesystemTools)
	}
	if got := c.call(t, "list_directory", map[string]any{"path": granted}); !strings.Contains(got, "hello.txt") {
		t.Fatalf("list_directory %s = %q", granted, got)
	}
	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_directory", Arguments: map[string]any{"path": other}})
	if err != nil || !res.IsError || strings.Contains(text(res), "secret.txt") {
		t.Fatalf("list_directory %s outside the granted one: %v %s", other, err, text(res))
	}
	if strings.Contains(c.stderr.String(), "than its manifest declares") {
		t.Errorf("the manifest's tools are the server's, and a difference was logged:\n%s", c.stderr)
	}
	c.cs.Close()

	// uninstall removes the declaration, the unpacked bundle and the
	// plugin block install added.
	out, code = plughostWith(t, env, "uninstall", "fs-bundle", "--plugins", plugins, "--config", config)
	if code != 0 {
		t.Fatalf("plughost uninstall (exit %d):\n%s", code, out)
	}
	for _, gone := range []string{filepath.Join(plugins, "fs-bundle.mcp.json"), filepath.Join(stateHome, "plughost", "bundles", "fs-bundle")} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("uninstall left %s (%v):\n%s", gone, err, out)
		}
	}
	if conf, _ := os.ReadFile(config); strings.Contains(string(conf), `plugin "fs-bundle"`) {
		t.Errorf("uninstall left the plugin block install added:\n%s", conf)
	}
}

// TestBundleDropped: a .mcpb copied into the plugin directory is served
// with its defaults only (allowed_directories is ${HOME}, the server's
// own data directory), unpacked on load; the tools it lists are those its
// manifest declares.
func TestBundleDropped(t *testing.T) {
	t.Parallel()
	bundle := buildFilesystemBundle(t, nil)
	plugins, stateHome := t.TempDir(), t.TempDir()
	b, err := os.ReadFile(bundle)
	if err == nil {
		err = os.WriteFile(filepath.Join(plugins, "fs.mcpb"), b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := serveWrappedStdio(t, plugins, "", "XDG_STATE_HOME="+stateHome)
	c.awaitTool(t, "list_allowed_directories")
	data := filepath.Join(stateHome, "plughost", "plugins", "fs", "data")
	if got := c.call(t, "list_allowed_directories", nil); !strings.Contains(got, data) {
		t.Fatalf("list_allowed_directories = %q, want its data directory %s", got, data)
	}
	entries, err := os.ReadDir(filepath.Join(stateHome, "plughost", "bundles", "fs"))
	if err != nil || len(entries) != 3 { // .lock, the tree, its record
		t.Fatalf("unpacked: %v %v", entries, err)
	}
}

// handBundle is a bundle written here, not by mcpb: a manifest and an
// entry point that never runs (the bundle is refused before).
// extra are more entries, holding their own name.
func handBundle(t *testing.T, dir, manifest string, extra ...string) string {
	t.Helper()
	path := filepath.Join(dir, "hand.mcpb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := zip.NewWriter(f)
	for name, content := range map[string]string{"manifest.json": manifest, "server/index.js": "process.exit(3)\n"} {
		z, _ := w.Create(name)
		z.Write([]byte(content))
	}
	for _, name := range extra {
		z, _ := w.Create(name)
		z.Write([]byte(name))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// TestBundleRefusals: a required user_config that nobody gave (a dropped
// bundle fails to load, saying how to give it), a manifest for another
// platform, and a zip with a path leaving its directory are refused by
// plughost install with their reason, and nothing is left behind.
func TestBundleRefusals(t *testing.T) {
	t.Parallel()
	manifest := `{"manifest_version": "0.3", "name": "hand", "version": "1.0.0", "description": "d", "author": {"name": "a"},
  "server": {"type": "node", "entry_point": "server/index.js", "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.js", "${user_config.root}"]}},
  "compatibility": {"platforms": [PLATFORMS]},
  "user_config": {"root": {"type": "directory", "title": "Root", "description": "r", "required": true}}}`
	t.Run("required value of a dropped bundle", func(t *testing.T) {
		plugins, stateHome := t.TempDir(), t.TempDir()
		handBundle(t, plugins, strings.Replace(manifest, "PLATFORMS", `"linux", "darwin"`, 1))
		c := serveWrappedStdio(t, plugins, "", "XDG_STATE_HOME="+stateHome)
		c.stderr.await(t, "the bundle needs user_config root, which has no default: give it with `plughost install BUNDLE.mcpb`")
	})
	t.Run("a failed upgrade keeps the installed version", func(t *testing.T) {
		plugins, stateHome, src, root := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
		env := []string{"XDG_STATE_HOME=" + stateHome}
		good := handBundle(t, src, strings.Replace(manifest, "PLATFORMS", `"linux", "darwin"`, 1))
		args := []string{"--plugins", plugins, "--config-out", "-", "--yes", "--set", "root=" + root, "--name", "hand"}
		if out, code := plughostWith(t, env, append([]string{"install", good}, args...)...); code != 0 {
			t.Fatalf("plughost install (exit %d):\n%s", code, out)
		}
		decl := filepath.Join(plugins, "hand.mcp.json")
		before, err := os.ReadFile(decl)
		if err != nil {
			t.Fatal(err)
		}
		bundles := filepath.Join(stateHome, "plughost", "bundles", "hand")
		had, _ := os.ReadDir(bundles)
		bad := handBundle(t, t.TempDir(), strings.Replace(manifest, "PLATFORMS", `"win32"`, 1))
		out, code := plughostWith(t, env, append([]string{"install", bad, "--force"}, args...)...)
		if code == 0 || !strings.Contains(out, "the bundle runs on win32 only") {
			t.Fatalf("plughost install --force of a bundle for another platform (exit %d):\n%s", code, out)
		}
		after, err := os.ReadFile(decl)
		if err != nil || string(after) != string(before) {
			t.Fatalf("the declaration changed: %v\n%s", err, after)
		}
		if has, _ := os.ReadDir(bundles); len(has) != len(had) {
			t.Fatalf("bundles before %v, after %v", had, has)
		}
	})
	t.Run("over the operator's limit", func(t *testing.T) {
		config := filepath.Join(t.TempDir(), "plughost.hcl")
		if err := os.WriteFile(config, []byte("plugins {\n  bundle_limits {\n    max_files = 1\n  }\n}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		bundle := handBundle(t, t.TempDir(), strings.Replace(manifest, "PLATFORMS", `"linux"`, 1))
		out, code := plughostWith(t, []string{"XDG_STATE_HOME=" + t.TempDir()}, "install", bundle, "--plugins", t.TempDir(), "--config", config, "--config-out", "-", "--yes")
		if code == 0 || !strings.Contains(out, "2 entries, over the limit of 1 (bundle_limits.max_files); nothing installed") {
			t.Fatalf("plughost install over max_files (exit %d):\n%s", code, out)
		}
	})
	for _, c := range []struct{ name, manifest, want string }{
		{"another platform", strings.Replace(manifest, "PLATFORMS", `"win32"`, 1), "the bundle runs on win32 only, and this host is"},
		{"no value", strings.Replace(manifest, "PLATFORMS", `"linux", "darwin"`, 1), "user_config root: root is required: no answer"},
		{"a uv server", strings.NewReplacer(`"0.3"`, `"0.4"`, `"type": "node"`, `"type": "uv"`, "PLATFORMS", `"linux"`).Replace(manifest),
			`server type "uv": uv bundles need uv and the network to install their Python dependencies: not supported yet`},
		{"a path leaving its directory", strings.Replace(manifest, "PLATFORMS", `"linux", "darwin"`, 1), `"../escape": a ".." path`},
	} {
		t.Run(c.name, func(t *testing.T) {
			plugins, stateHome, src := t.TempDir(), t.TempDir(), t.TempDir()
			var extra []string
			if strings.HasPrefix(c.name, "a path") {
				extra = []string{"../escape"}
			}
			bundle := handBundle(t, src, c.manifest, extra...)
			config := filepath.Join(t.TempDir(), "plughost.hcl")
			out, code := plughostWith(t, []string{"XDG_STATE_HOME=" + stateHome}, "install", bundle, "--plugins", plugins, "--config-out", config, "--yes")
			if code == 0 || !strings.Contains(out, c.want) || !strings.Contains(out, "nothing installed") {
				t.Fatalf("plughost install (exit %d) does not say %q and nothing installed:\n%s", code, c.want, out)
			}
			for _, d := range []string{plugins, filepath.Join(stateHome, "plughost", "bundles", "hand"), filepath.Join(stateHome, "plughost", "secrets")} {
				if left, _ := os.ReadDir(d); len(left) != 0 {
					t.Errorf("left in %s: %v", d, left)
				}
			}
			if _, err := os.Stat(config); err == nil {
				t.Errorf("configuration written: %s", config)
			}
		})
	}
}

// TestBundlePinned: in trust mode pinned an installed bundle waits for
// plughost approve, then serves; a new bundle installed over it (another
// file, so another SHA-256 in its declaration) waits again, its previous
// version kept unpacked; and a bundle whose server lists a tool its
// manifest does not declare is held, the difference said.
func TestBundlePinned(t *testing.T) {
	t.Parallel()
	bundle := buildFilesystemBundle(t, nil)
	newer := buildFilesystemBundle(t, func(m map[string]any) {
		m["version"] = "1.0.1"
		var tools []map[string]string
		for _, n := range filesystemTools {
			if n != "move_file" {
				tools = append(tools, map[string]string{"name": n})
			}
		}
		m["tools"] = tools
	})
	plugins, stateHome, granted := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Chmod(granted, 0o777); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(config, []byte("trust {\n  mode = \"pinned\"\n  file = \"trust.json\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_STATE_HOME=" + stateHome}
	install := func(b string, more ...string) string {
		out, code := plughostWith(t, env, append([]string{"install", b, "--name", "fs", "--plugins", plugins, "--config", config, "--yes",
			"--set", "allowed_directories=" + granted}, more...)...)
		if code != 0 || !strings.Contains(out, "trust mode pinned: it waits for `plughost approve fs`") {
			t.Fatalf("plughost install (exit %d):\n%s", code, out)
		}
		return out
	}
	install(bundle)
	quarantined := "quarantined"
	if out, _ := plughostWith(t, env, "plugins", "--plugins", plugins, "--config", config); !strings.Contains(out, quarantined) {
		t.Fatalf("plughost plugins before approval:\n%s", out)
	}
	if out, code := plughostWith(t, env, "approve", "fs", "--plugins", plugins, "--config", config); code != 0 || !strings.Contains(out, "approved fs") {
		t.Fatalf("plughost approve (exit %d):\n%s", code, out)
	}
	c := serveWrappedStdio(t, plugins, config, env...)
	c.awaitTool(t, "list_directory")
	c.call(t, "list_directory", map[string]any{"path": granted})
	c.cs.Close()

	install(newer, "--force")
	if out, _ := plughostWith(t, env, "plugins", "--plugins", plugins, "--config", config); !strings.Contains(out, "changed since approval") {
		t.Fatalf("plughost plugins after a new bundle:\n%s", out)
	}
	if entries, _ := os.ReadDir(filepath.Join(stateHome, "plughost", "bundles", "fs")); len(entries) != 7 { // .lock, 2 × (file, tree, record)
		t.Errorf("the previous version is not kept beside the new one: %v", entries)
	}
	// approve runs the server to pin its definitions: held, it says why,
	// and approves the digest only; served, it stays held.
	out, _ := plughostWith(t, env, "approve", "fs", "--plugins", plugins, "--config", config)
	if !strings.Contains(out, `difference="tools listed and not declared: move_file"`) {
		t.Fatalf("plughost approve of a bundle listing an undeclared tool:\n%s", out)
	}
	c = serveWrappedStdio(t, plugins, config, env...)
	c.stderr.await(t, "held in this trust mode")
	if tools := c.toolNames(t); len(tools) != 0 {
		t.Fatalf("a held bundle's tools are served: %v", tools)
	}
}
