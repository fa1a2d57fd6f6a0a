package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runScript runs the script at path (through link, when not "") as a
// plugin under pol, and returns its stdout and stderr, and whether it
// started and exited 0.
func runScript(t *testing.T, path string, pol *Policy) (stdout, stderr string, ok bool) {
	t.Helper()
	l, err := New(&Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := &exec.Cmd{Path: path, Args: []string{path}, Stdout: &out, Stderr: &errOut}
	launch, err := l.Wrap("script", pol, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := launch.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, startErr := launch.Started(launch.Cmd.Process.Pid)
	waitErr := launch.Cmd.Wait()
	launch.Exited()
	if startErr != nil {
		errOut.WriteString("\nstarted: " + startErr.Error())
	}
	return out.String(), errOut.String(), startErr == nil && waitErr == nil
}

// project makes a plugin project reachable by uid 65534 (the plugins' uid
// when the test runs as root): a directory with files, and a plugin
// directory whose file links to the project's script.
func project(t *testing.T, files map[string]string, script string) (link string) {
	t.Helper()
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(base, "proj")
	for name, content := range files {
		mode := os.FileMode(0o644)
		if name == script {
			mode = 0o755
		}
		writeFile(t, filepath.Join(proj, name), content, mode)
	}
	return symlink(t, filepath.Join(proj, script), filepath.Join(base, "plugins", "p"))
}

// nodeForTests is a real node binary: Node 22 from conformance/ (npm ci),
// else the system's.
func nodeForTests(t *testing.T) string {
	for _, p := range []string{"../conformance/node_modules/node/bin/node", "/usr/bin/node"} {
		if abs, err := filepath.Abs(p); err == nil && isExecutable(abs) {
			return abs
		}
	}
	t.Skip("no node: run npm ci in conformance/")
	return ""
}

// Under the default policy a node or python script runs its interpreter
// but cannot start (node needs /etc/ssl/openssl.cnf) or cannot read its
// own directory; with the runtime preset it runs, and still cannot read
// what the preset does not grant.
func TestRuntimePresets(t *testing.T) {
	t.Run("node", func(t *testing.T) {
		node := nodeForTests(t)
		link := project(t, map[string]string{
			"plugin.mjs": "#!" + node + "\n" +
				"import { greeting } from './lib.mjs';\n" +
				"import { readFileSync } from 'node:fs';\n" +
				"let shadow = 'readable';\n" +
				"try { readFileSync('/etc/shadow') } catch (e) { shadow = e.code }\n" +
				"console.log(greeting, 'shadow:', shadow);\n",
			"lib.mjs":                       "export { greeting } from 'dep';\n",
			"node_modules/dep/package.json": `{"name":"dep","type":"module","exports":"./index.js"}`,
			"node_modules/dep/index.js":     "export const greeting = 'hello from node_modules';\n",
		}, "plugin.mjs")
		if _, stderr, ok := runScript(t, link, nil); ok || !strings.Contains(stderr, "openssl.cnf") {
			t.Errorf("default policy: ok %v, stderr %q; want node to fail on /etc/ssl/openssl.cnf", ok, stderr)
		}
		stdout, stderr, ok := runScript(t, link, &Policy{Runtime: RuntimeNode})
		if want := "hello from node_modules shadow: EACCES\n"; !ok || stdout != want {
			t.Errorf("runtime node: ok %v, stdout %q, stderr %q; want %q", ok, stdout, stderr, want)
		}
	})
	t.Run("python", func(t *testing.T) {
		const python = "/usr/bin/python3"
		if !isExecutable(python) {
			t.Skip("no " + python + ": the python preset is untested on this machine")
		}
		link := project(t, map[string]string{
			"main.py": "#!" + python + "\n" +
				"import json, helper\n" +
				"try:\n    open('/etc/shadow').read(); shadow = 'readable'\n" +
				"except PermissionError:\n    shadow = 'EACCES'\n" +
				"print(json.dumps(helper.greeting), 'shadow:', shadow)\n",
			"helper.py": "greeting = 'hello from the plugin directory'\n",
		}, "main.py")
		if stdout, stderr, ok := runScript(t, link, nil); ok || !strings.Contains(stderr, "helper") {
			t.Errorf("default policy: ok %v, stdout %q, stderr %q; want the import of helper to fail", ok, stdout, stderr)
		}
		stdout, stderr, ok := runScript(t, link, &Policy{Runtime: RuntimePython})
		if want := "\"hello from the plugin directory\" shadow: EACCES\n"; !ok || stdout != want {
			t.Errorf("runtime python: ok %v, stdout %q, stderr %q; want %q", ok, stdout, stderr, want)
		}
	})
}
