package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plughost/plughost/internal/mcpbcli"
)

// packBundle writes files (path → content; a path ending in "*" is
// written executable, the star dropped) and manifest into a directory,
// and has mcpb validate and pack it.
func packBundle(t *testing.T, manifest string, files map[string]string) string {
	t.Helper()
	src := t.TempDir()
	files["manifest.json"] = manifest
	for name, content := range files {
		mode := os.FileMode(0o644)
		if n, ok := strings.CutSuffix(name, "*"); ok {
			name, mode = n, 0o755
		}
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := mcpbcli.Run(t, "validate", filepath.Join(src, "manifest.json")); err != nil {
		t.Fatalf("mcpb validate: %v\n%s", err, out)
	}
	bundle := filepath.Join(t.TempDir(), "b.mcpb")
	if out, err := mcpbcli.Run(t, "pack", src, bundle); err != nil {
		t.Fatalf("mcpb pack: %v\n%s", err, out)
	}
	return bundle
}

// TestBundlePythonAndBinary: a python bundle (its module under
// server/lib, PYTHONPATH from its mcp_config) and a binary one (its entry
// point an executable file of the bundle), both packed by mcpb and
// dropped into the plugin directory, run with their defaults and answer
// a call.
func TestBundlePythonAndBinary(t *testing.T) {
	t.Parallel()
	head := `{"manifest_version": "0.3", "name": "NAME", "version": "1.0.0", "description": "d", "author": {"name": "a"},
  "user_config": {"who": {"type": "string", "title": "Who", "description": "whom to greet", "default": "bundle"}},
  "compatibility": {"platforms": ["linux", "darwin"], "runtimes": {"python": ">=3.8"}}, "tools": [{"name": "hello_py"}], `
	for _, c := range []struct{ name, server string }{
		{"python", `"server": {"type": "python", "entry_point": "server/lib/hello_mcp/__main__.py", "mcp_config": {"command": "python3",
  "args": ["-m", "hello_mcp", "${user_config.who}"], "env": {"PYTHONPATH": "${__dirname}/server/lib"}}}}`},
		{"binary", `"server": {"type": "binary", "entry_point": "server/hello", "mcp_config": {"command": "${__dirname}/server/hello",
  "args": ["${user_config.who}"]}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			manifest := strings.Replace(head, "NAME", "hello-"+c.name, 1) + c.server
			bundle := packBundle(t, manifest, map[string]string{
				"server/lib/hello_mcp/__main__.py": helloPy + "\nmain()\n",
				"server/hello*":                    "#!/usr/bin/env python3\n" + helloPy + "\nmain()\n",
			})
			plugins := t.TempDir()
			b, err := os.ReadFile(bundle)
			if err == nil {
				err = os.WriteFile(filepath.Join(plugins, "hello.mcpb"), b, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			cl := serveWrappedStdio(t, plugins, "")
			cl.awaitTool(t, "hello_py")
			if got := cl.call(t, "hello_py", nil); got != "hello bundle from python" {
				t.Fatalf("hello_py = %q", got)
			}
			if c.name != "python" {
				return
			}
			// A declaration naming the bundle relative to the plugin
			// directory, with a value of its own.
			declared := t.TempDir()
			if err := os.MkdirAll(filepath.Join(declared, "bundles"), 0o755); err == nil {
				err = os.WriteFile(filepath.Join(declared, "bundles", "hello.mcpb"), b, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			declare(t, declared, "greeter", map[string]any{"bundle": "bundles/hello.mcpb", "user_config": map[string]any{"who": "declared"}})
			cl = serveWrappedStdio(t, declared, "")
			cl.awaitTool(t, "hello_py")
			if got := cl.call(t, "hello_py", nil); got != "hello declared from python" {
				t.Fatalf("hello_py of the declaration = %q", got)
			}
		})
	}
}
