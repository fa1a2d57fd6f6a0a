package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeNode makes an executable named node under dir/lib/node-v24/bin,
// linked from dir/bin/node, that is no script (so nothing follows a "#!"
// line of it) and no ELF file (so it has no RUNPATH): the test depends on
// no node of the machine's. It returns the link and the file.
func fakeNode(t *testing.T, dir string) (link, real string) {
	t.Helper()
	real = writeFile(t, filepath.Join(dir, "lib", "node-v24", "bin", "node"), "not really node\n", 0o755)
	link = symlink(t, "../lib/node-v24/bin/node", filepath.Join(dir, "bin", "node"))
	return link, real
}

// tempRoot is a temporary directory with its links resolved (macOS's
// /var is /private/var), so that paths compare as ServerGrants gives them.
func tempRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func hasAll(t *testing.T, grants, want []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(grants, w) {
			t.Errorf("grants lack %s:\n%s", w, strings.Join(grants, "\n"))
		}
	}
}

func hasNone(t *testing.T, grants, unwanted []string) {
	t.Helper()
	for _, u := range unwanted {
		if slices.Contains(grants, u) {
			t.Errorf("grants hold %s:\n%s", u, strings.Join(grants, "\n"))
		}
	}
}

// "node /…/node_modules/pkg/dist/index.js": the interpreter (as named and
// its real path), the whole node_modules tree the script lies in (where
// its dependencies are), node's openssl.cnf; the script reached through a
// link (npm's .bin) is granted where it really is. Nothing above the tree:
// the declaration chose the script, not the operator.
func TestServerGrantsNodeScript(t *testing.T) {
	t.Parallel()
	root := tempRoot(t)
	node, nodeReal := fakeNode(t, root)
	tree := filepath.Join(root, "proj", "node_modules")
	script := writeFile(t, filepath.Join(tree, "@mcp", "server", "dist", "index.js"), "console.log(1)\n", 0o644)
	bin := symlink(t, "../@mcp/server/dist/index.js", filepath.Join(tree, ".bin", "mcp-server"))
	other := t.TempDir() // an operator's directory among the arguments: not a file, not granted

	for _, arg := range []string{script, bin} {
		t.Run(filepath.Base(arg), func(t *testing.T) {
			grants, err := ServerGrants("", node, []string{arg, other})
			if err != nil {
				t.Fatal(err)
			}
			hasAll(t, grants, []string{node, nodeReal, tree, "/etc/ssl/openssl.cnf"})
			hasNone(t, grants, []string{other, filepath.Join(root, "proj")})
		})
	}

	// The runtime may be given, and must be one there is.
	if _, err := ServerGrants("node", node, []string{script}); err != nil {
		t.Fatalf("runtime node: %v", err)
	}
	if _, err := ServerGrants("ruby", node, []string{script}); err == nil || !strings.Contains(err.Error(), `unknown runtime "ruby"`) {
		t.Fatalf("runtime ruby: %v, want it refused", err)
	}
}

// A script that is the command itself: its "#!" interpreter, named
// absolutely or run through env (then found in the sandbox's PATH). The
// script's directory only with a runtime the operator chose: a
// declaration's own choice of script gets no directory read.
func TestServerGrantsScriptCommand(t *testing.T) {
	t.Parallel()
	root := tempRoot(t)
	node, nodeReal := fakeNode(t, root)
	srv := filepath.Join(root, "srv")

	t.Run("absolute", func(t *testing.T) {
		script := writeFile(t, filepath.Join(srv, "abs", "server.js"), "#!"+node+"\nconsole.log(1)\n", 0o755)
		grants, err := ServerGrants("", script, nil)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(script)
		hasAll(t, grants, []string{script, node, nodeReal, "/etc/ssl/openssl.cnf"})
		hasNone(t, grants, []string{dir, filepath.Join(dir, "node_modules")})
		grants, err = ServerGrants(RuntimeNode, script, nil) // the operator's runtime
		if err != nil {
			t.Fatal(err)
		}
		hasAll(t, grants, []string{script, node, nodeReal, dir, filepath.Join(dir, "node_modules"), "/etc/ssl/openssl.cnf"})
	})

	t.Run("env", func(t *testing.T) {
		script := writeFile(t, filepath.Join(srv, "env", "server.js"), "#!/usr/bin/env node\nconsole.log(1)\n", 0o755)
		grants, err := serverGrants("", script, nil, filepath.Join(root, "none")+string(filepath.ListSeparator)+filepath.Join(root, "bin"))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(script)
		hasAll(t, grants, []string{script, "/usr/bin/env", node, nodeReal, "/etc/ssl/openssl.cnf"})
		hasNone(t, grants, []string{dir})
	})

	t.Run("env without node in PATH", func(t *testing.T) {
		script := writeFile(t, filepath.Join(srv, "nonode", "server.js"), "#!/usr/bin/env -S node --no-warnings\n", 0o755)
		grants, err := serverGrants("", script, nil, filepath.Join(root, "none"))
		if err != nil {
			t.Fatal(err)
		}
		// No node to grant: env is the interpreter, which is no runtime's.
		hasAll(t, grants, []string{script, "/usr/bin/env"})
		hasNone(t, grants, []string{node, nodeReal, "/etc/ssl/openssl.cnf"})
	})

	t.Run("PluginPATH", func(t *testing.T) {
		// ServerGrants looks in the sandbox's PATH: whatever node this
		// machine has there (if any) is what it grants.
		script := writeFile(t, filepath.Join(srv, "plugin", "server.js"), "#!/usr/bin/env node\n", 0o755)
		grants, err := ServerGrants("", script, nil)
		if err != nil {
			t.Fatal(err)
		}
		hasAll(t, grants, []string{script, "/usr/bin/env"})
		if found := inPATH("node", PluginPATH); found != "" {
			hasAll(t, grants, []string{found, "/etc/ssl/openssl.cnf"})
		} else {
			hasNone(t, grants, []string{"/etc/ssl/openssl.cnf"})
		}
	})
}

// A binary of no runtime gets itself (and its real path), nothing else.
func TestServerGrantsBinary(t *testing.T) {
	t.Parallel()
	cmd := "/bin/true"
	if !isExecutable(cmd) {
		cmd = "/usr/bin/true"
	}
	real, err := filepath.EvalSymlinks(cmd)
	if err != nil {
		t.Skip(err)
	}
	grants, err := ServerGrants("", cmd, []string{cmd})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{cmd, real}, runpath(real)...)
	if !slices.Equal(grants, want) {
		t.Fatalf("ServerGrants(%s) = %q, want %q", cmd, grants, want)
	}
}

func TestServerGrantsRefused(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"node", "bin/node", "./server"} {
		if g, err := ServerGrants("", cmd, nil); err == nil || !strings.Contains(err.Error(), "is not an absolute path") {
			t.Errorf("ServerGrants(%q) = %q, %v; want it refused", cmd, g, err)
		}
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if g, err := ServerGrants("", missing, nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("ServerGrants(%q) = %q, %v; want it refused", missing, g, err)
	}
}

func TestLookCommand(t *testing.T) {
	t.Parallel()
	root := tempRoot(t)
	a := filepath.Join(root, "a")
	b := filepath.Join(root, "b")
	exe := writeFile(t, filepath.Join(b, "srv"), "x", 0o755)
	plain := writeFile(t, filepath.Join(a, "srv"), "x", 0o644) // earlier in PATH, not executable: skipped
	if err := os.MkdirAll(filepath.Join(a, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := a + string(filepath.ListSeparator) + b

	cases := []struct {
		command string
		want    string
		wantErr string
	}{
		{exe, exe, ""},
		{plain, "", "is not an executable file"},
		{filepath.Join(a, "dir"), "", "is not an executable file"},
		{filepath.Join(a, "missing"), "", "is not an executable file"},
		{"b/srv", "", "give an absolute path, or a name found in PATH (" + path + ")"},
		{"./srv", "", "give an absolute path"},
		{"srv", exe, ""},
		{"nope", "", `command "nope" is not in the sandbox's PATH (` + path + `)`},
		{"dir", "", "is not in the sandbox's PATH"},
	}
	for _, c := range cases {
		got, err := LookCommand(c.command, path)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("LookCommand(%q) = %q, %v; want an error containing %q", c.command, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("LookCommand(%q) = %q, %v; want %q", c.command, got, err, c.want)
		}
	}
}

// The script whose directory is granted is the interpreter's script
// argument, not any file the declaration names: "node -e CODE FILE" (or
// "python3 -c CODE FILE") runs CODE, and must not be granted FILE's
// directory (a declaration would grant itself ~/.ssh by naming
// ~/.ssh/known_hosts after its code).
func TestServerGrantsNoScriptOfInlineCode(t *testing.T) {
	t.Parallel()
	root := tempRoot(t)
	node, _ := fakeNode(t, root)
	python := writeFile(t, filepath.Join(root, "bin", "python3"), "not really python\n", 0o755)
	secret := writeFile(t, filepath.Join(root, "home", ".ssh", "known_hosts"), "x\n", 0o600)
	script := writeFile(t, filepath.Join(root, "srv", "server.js"), "console.log(1)\n", 0o644)
	for _, c := range []struct {
		cmd  string
		args []string
	}{
		{node, []string{"-e", "require('fs').readFileSync(process.argv[1])", secret}},
		{node, []string{"--eval=x", secret}},
		{node, []string{"-pe", "x", secret}},
		{node, []string{"-", secret}},
		{node, []string{"relative.js", secret}},
		{python, []string{"-c", "print(open(__import__('sys').argv[1]).read())", secret}},
		{python, []string{"-Bc", "x", secret}},
		{python, []string{"-m", "http.server", secret}},
	} {
		grants, err := ServerGrants("", c.cmd, c.args)
		if err != nil {
			t.Fatal(err)
		}
		hasNone(t, grants, []string{filepath.Dir(secret), secret})
	}
	// The script itself still is found after options, and "--" (its
	// directory granted under the operator's runtime).
	for _, args := range [][]string{{"--no-warnings", script, secret}, {"-r", filepath.Join(root, "preload.js"), script}, {"--", script}} {
		grants, err := ServerGrants(RuntimeNode, node, args)
		if err != nil {
			t.Fatal(err)
		}
		hasAll(t, grants, []string{filepath.Dir(script)})
		hasNone(t, grants, []string{filepath.Dir(secret)})
	}
}
