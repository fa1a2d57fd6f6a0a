package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeFile writes content to path (making its directory) with mode.
func writeFile(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func symlink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// What each runtime grants, on a made-up tree: a node and a python
// elsewhere than the system's, a project directory with its script, the
// plugin directory's link to it, a virtual environment.
func TestRuntimeGrants(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bin := filepath.Join(root, "usr", "bin") // the made-up PATH
	node := writeFile(t, filepath.Join(root, "opt", "node", "bin", "node"), "not really node", 0o755)
	py := writeFile(t, filepath.Join(root, "py", "bin", "python3.12"), "not really python", 0o755)
	symlink(t, "python3.12", filepath.Join(root, "py", "bin", "python3"))
	pathNode := writeFile(t, filepath.Join(bin, "node"), "a node in PATH", 0o755)

	proj := filepath.Join(root, "proj")
	script := writeFile(t, filepath.Join(proj, "plugin.mjs"), "#!"+node+"\n", 0o755)
	plugins := filepath.Join(root, "plugins")
	link := symlink(t, script, filepath.Join(plugins, "hello"))
	venv := filepath.Join(proj, ".venv")
	writeFile(t, filepath.Join(venv, "pyvenv.cfg"), "home = "+filepath.Dir(py)+"\n", 0o644)
	venvPython := symlink(t, filepath.Join(root, "py", "bin", "python3"), filepath.Join(venv, "bin", "python"))
	pyScript := writeFile(t, filepath.Join(proj, "main.py"), "#!"+venvPython+"\n", 0o755)
	envScript := writeFile(t, filepath.Join(proj, "env.mjs"), "#!/usr/bin/env -S node --no-warnings\n", 0o755)
	shScript := writeFile(t, filepath.Join(proj, "launch.sh"), "#!/bin/sh\nexec node plugin.mjs\n", 0o755)
	elfPlugin := writeFile(t, filepath.Join(plugins, "bin"), "\x7fELF", 0o755)

	for name, c := range map[string]struct {
		rt      Runtime
		path    string
		want    []string // all among the grants
		notWant []string
	}{
		"none": {rt: "", path: link},
		"node, through the plugin directory's link": {rt: RuntimeNode, path: link,
			want:    []string{node, "/etc/ssl/openssl.cnf", proj, filepath.Join(proj, "node_modules")},
			notWant: []string{plugins, pathNode}},
		"node through env": {rt: RuntimeNode, path: envScript, want: []string{pathNode, proj}},
		"node for a launcher script": {rt: RuntimeNode, path: shScript,
			want: []string{pathNode, proj}, notWant: []string{"/bin/sh"}},
		"node for a binary": {rt: RuntimeNode, path: elfPlugin, want: []string{pathNode, plugins}},
		"python in a venv": {rt: RuntimePython, path: pyScript,
			want: []string{venvPython, py, filepath.Join(root, "py", "lib", "python3.12"),
				filepath.Join(root, "py", "lib", "python3", "dist-packages"), "/usr/local/lib/python3.12/dist-packages",
				"/etc/python3.12", venv, proj},
			notWant: []string{"/etc/ssl/openssl.cnf", filepath.Join(proj, "node_modules")}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := runtimeGrants(c.rt, c.path, bin)
			if err != nil {
				t.Fatal(err)
			}
			if c.rt == "" && got != nil {
				t.Errorf("no runtime grants %v", got)
			}
			for _, w := range c.want {
				if !slices.Contains(got, w) {
					t.Errorf("grants %v lack %s", got, w)
				}
			}
			for _, n := range c.notWant {
				if slices.Contains(got, n) {
					t.Errorf("grants %v include %s", got, n)
				}
			}
		})
	}

	for name, c := range map[string]struct {
		rt         Runtime
		path, want string
	}{
		"unknown runtime": {"ruby", link, `unknown runtime "ruby"`},
		"env finds no node": {RuntimeNode, envScript,
			`runtime "node": the #! line of ` + envScript + ` runs node through /usr/bin/env, but the plugin's PATH (` + root + `) has no node: write the interpreter's absolute path in the #! line`},
		"no python anywhere": {RuntimePython, shScript, `runtime "python": no python3 interpreter in the plugin's PATH`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := runtimeGrants(c.rt, c.path, root) // a PATH with no interpreter
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("grants = %v, %v; want an error containing %q", got, err, c.want)
			}
		})
	}
}

func TestShebang(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for content, want := range map[string][]string{
		"#!/usr/bin/env -S node --no-warnings\n": {"/usr/bin/env", "-S", "node", "--no-warnings"},
		"#! /bin/sh\necho\n":                     {"/bin/sh"},
		"#!/usr/bin/python3":                     {"/usr/bin/python3"},
		"\x7fELF...":                             nil,
		"#!\n":                                   nil,
	} {
		p := writeFile(t, filepath.Join(dir, "f"), content, 0o755)
		interp, args, ok := Shebang(p)
		got := append([]string{interp}, args...)
		if !ok {
			got = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("Shebang(%q) = %q, want %q", content, got, want)
		}
	}
	if prog := envProgram([]string{"-S", "A=1", "node", "x"}); prog != "node" {
		t.Errorf("envProgram = %q, want node", prog)
	}
}

func TestPolicyCheckRuntime(t *testing.T) {
	t.Parallel()
	for _, r := range []Runtime{"", RuntimeNode, RuntimePython} {
		if err := (&Policy{Runtime: r}).Check(); err != nil {
			t.Errorf("Check(runtime %q) = %v", r, err)
		}
	}
	if err := (&Policy{Runtime: "deno"}).Check(); err == nil || !strings.Contains(err.Error(), `unknown runtime "deno"`) {
		t.Errorf("Check(runtime deno) = %v", err)
	}
}
