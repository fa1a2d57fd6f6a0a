package sandbox

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateSeatbelt = flag.Bool("update", false, "rewrite testdata/seatbelt/*.sb from the generator")

// seatbeltTestPaths are a plugin's paths as a Mac would give them; none
// exists here, so seatbeltForms adds no resolved form and the goldens are
// the same on every machine.
var seatbeltTestPaths = seatbeltPaths{
	Program: "/Users/alice/plugins/echo",
	Data:    "/Users/alice/.local/state/plughost/plugins/echo/data",
	Tmp:     "/private/var/folders/xy/T/plughost-run/echo-123",
	Sock:    "/private/var/folders/xy/T/plughost-run/sock-echo",
}

func boolPtr(b bool) *bool { return &b }

// TestSeatbeltProfileGolden writes the profile of every policy shape and
// compares it with testdata/seatbelt/<shape>.sb (go test -run
// TestSeatbeltProfileGolden -update rewrites them: read the diff).
func TestSeatbeltProfileGolden(t *testing.T) {
	node := seatbeltTestPaths
	node.Program = "/Users/alice/plugins/notes/index.js"
	node.Interpreters = []string{"/usr/bin/env", "/opt/homebrew/bin/node"}
	node.Runtime = []string{"/opt/homebrew/bin/node", "/opt/homebrew/Cellar/node/22.1.0/bin/node", "/Users/alice/plugins/notes", "/private/etc/ssl/openssl.cnf", "/Users/alice/plugins/notes/node_modules"}
	python := seatbeltTestPaths
	python.Program = "/Users/alice/plugins/weather.py"
	python.Interpreters = []string{"/opt/homebrew/bin/python3"}
	python.Runtime = []string{"/opt/homebrew/bin/python3", "/opt/homebrew/Cellar/python@3.12/3.12.4/bin/python3.12", "/Users/alice/plugins", "/opt/homebrew/Cellar/python@3.12/3.12.4/lib/python3.12"}
	hostile := seatbeltTestPaths
	hostile.Data = `/Users/al"ice/da\ta/données/日本`
	for _, c := range []struct {
		name  string
		pol   Policy
		paths seatbeltPaths
	}{
		{"default", Policy{}, seatbeltTestPaths},
		{"read", Policy{AllowRead: []string{"/Users/alice/Documents", "/opt/tools/bin/rg"}}, seatbeltTestPaths},
		{"write", Policy{AllowWrite: []string{"/Users/alice/notes"}}, seatbeltTestPaths},
		{"net-none", Policy{Net: NetNone}, seatbeltTestPaths},
		{"net-list", Policy{Net: NetList, NetAllow: []string{"api.github.com:443", "example.org:443", "localhost:8080"}}, seatbeltTestPaths},
		{"net-all", Policy{Net: NetAll}, seatbeltTestPaths},
		{"node", Policy{Runtime: RuntimeNode}, node},
		{"python", Policy{Runtime: RuntimePython}, python},
		{"allow-jit", Policy{AllowJIT: boolPtr(true)}, seatbeltTestPaths},
		{"exec-written", Policy{AllowExecWritten: true}, seatbeltTestPaths},
		{"strict", Policy{Strict: true}, seatbeltTestPaths},
		{"hostile", Policy{AllowRead: []string{`/Users/alice/"quoted") (allow default`, `/Users/alice/back\slash\`, "/Users/ålice/Dokumente/Überblick"}}, hostile},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := seatbeltProfile("echo", &c.pol, c.paths)
			if err != nil {
				t.Fatal(err)
			}
			strs := checkSexp(t, got)
			for _, p := range slices.Concat(c.pol.AllowRead, c.pol.AllowWrite, []string{c.paths.Program, c.paths.Data, c.paths.Tmp}) {
				if !slices.Contains(strs, p) {
					t.Errorf("the profile, read as SBPL, does not name %q; its strings: %q", p, strs)
				}
			}
			file := filepath.Join("testdata", "seatbelt", c.name+".sb")
			if *updateSeatbelt {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("profile differs from %s (run with -update and read the diff):\n%s", file, got)
			}
		})
	}
}

// checkSexp reads profile as SBPL's reader would: strings in double
// quotes with backslash escapes, comments from ';' to the end of the
// line, parentheses balanced, and every top-level form a version, deny or
// allow. It returns the strings, unescaped: a granted path must be among
// them as it was given, not cut or run into its neighbour.
func checkSexp(t *testing.T, profile string) []string {
	t.Helper()
	depth, inString, inComment := 0, false, false
	var top, strs []string
	var cur strings.Builder
	for i := 0; i < len(profile); i++ {
		c := profile[i]
		switch {
		case inComment:
			inComment = c != '\n'
		case inString && c == '\\':
			i++
			cur.WriteByte(profile[i])
		case inString && c == '"':
			inString = false
			strs = append(strs, cur.String())
		case inString:
			cur.WriteByte(c)
		case c == '"':
			inString = true
			cur.Reset()
		case c == ';':
			inComment = true
		case c == '(':
			if depth == 0 {
				end := strings.IndexAny(profile[i+1:], " )\n")
				top = append(top, profile[i+1:i+1+end])
			}
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				t.Fatalf("unbalanced ')' at byte %d", i)
			}
		}
	}
	if depth != 0 || inString {
		t.Fatalf("profile ends inside a form (depth %d) or a string (%v)", depth, inString)
	}
	if len(top) < 2 || top[0] != "version" || top[1] != "deny" {
		t.Fatalf("profile must start with (version 1) (deny default), starts %q", top)
	}
	for _, f := range top[2:] {
		if f != "allow" {
			t.Fatalf("top-level form %q: only allow rules follow (deny default)", f)
		}
	}
	return strs
}

// TestSeatbeltStringRefuses: what a profile cannot name is refused,
// naming the path, rather than written into a profile sandbox-exec would
// misread or reject.
func TestSeatbeltStringRefuses(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/Users/a\nb", "control character"},
		{"/Users/a\x00b", "control character"},
		{"/Users/a\x7fb", "control character"},
		{"/Users/\xff", "not valid UTF-8"},
		{"/" + strings.Repeat("a", 1023), "longer than"},
		{"/" + strings.Repeat(`"`, 600), "longer than"},
	} {
		pol := &Policy{AllowWrite: []string{c.path}}
		_, err := seatbeltProfile("echo", pol, seatbeltTestPaths)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "allow_write") {
			t.Errorf("%q: got %v, want an allow_write error saying %q", c.path, err, c.want)
		}
	}
	if _, err := seatbeltString("/" + strings.Repeat("a", 1022)); err != nil {
		t.Errorf("1023 bytes: %v, want accepted", err)
	}
	if _, err := seatbeltProfile("bad\nname", &Policy{}, seatbeltTestPaths); err == nil || !strings.Contains(err.Error(), "plugin name") {
		t.Errorf("plugin name with a newline: %v", err)
	}
}

// TestSeatbeltFormsResolvesLinks: a granted path behind a symbolic link
// is named as given and as resolved (Seatbelt matches the latter, a
// program opens the former), once each.
func TestSeatbeltFormsResolvesLinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	realResolved, _ := filepath.EvalSymlinks(real)
	got := seatbeltForms(link+"/", real, "", "/does/not/exist")
	want := []string{link, realResolved, "/does/not/exist"}
	if realResolved != real {
		want = []string{link, realResolved, real, "/does/not/exist"}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("seatbeltForms = %q, want %q", got, want)
	}
	prof, err := seatbeltProfile("echo", &Policy{AllowWrite: []string{link}}, seatbeltTestPaths)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range want[:2] {
		if !strings.Contains(prof, `(subpath "`+p+`")`) {
			t.Errorf("profile does not grant %s:\n%s", p, prof)
		}
	}
}

// TestSeatbeltStageArgs: the darwin stage's command line reads back as
// written, and the stage runs nothing but sandbox-exec -f.
func TestSeatbeltStageArgs(t *testing.T) {
	args := seatbeltStageArgs("/usr/local/bin/plughost", 256, "/run/p.sb", "/Users/a/echo", []string{"echo", "--flag", "x y"})
	want := "/usr/local/bin/plughost|" + StageArg + "|seatbelt-exec|256|/usr/bin/sandbox-exec|-f|/run/p.sb|/Users/a/echo|--flag|x y"
	if strings.Join(args, "|") != want {
		t.Fatalf("args = %q", args)
	}
	nofile, argv, err := parseSeatbeltStage(args[3:])
	if err != nil || nofile != 256 || strings.Join(argv, "|") != "/usr/bin/sandbox-exec|-f|/run/p.sb|/Users/a/echo|--flag|x y" {
		t.Fatalf("parse = %d %q %v", nofile, argv, err)
	}
	for _, bad := range [][]string{
		{"256", "/usr/bin/sandbox-exec", "-f", "/p.sb"},
		{"0", "/usr/bin/sandbox-exec", "-f", "/p.sb", "/echo"},
		{"x", "/usr/bin/sandbox-exec", "-f", "/p.sb", "/echo"},
		{"256", "/bin/sh", "-c", "id", "x"},
		{"256", "/usr/bin/sandbox-exec", "-p", "(version 1)(allow default)", "/echo"},
	} {
		if _, _, err := parseSeatbeltStage(bad); err == nil {
			t.Errorf("parseSeatbeltStage(%q) accepted", bad)
		}
	}
}

// TestSeatbeltMissing: the layers Seatbelt cannot give are named, with
// why; the names part of allow_net only for a list.
func TestSeatbeltMissing(t *testing.T) {
	m := seatbeltMissing(&Policy{}, "/Users/a/echo")
	for _, l := range []Layer{LayerCgroupMemory, LayerCgroupPids, LayerWriteXorExec} {
		if m[l] == "" {
			t.Errorf("%s not named missing: %v", l, m)
		}
	}
	if _, ok := m[LayerNetNames]; ok {
		t.Errorf("net-names missing without an allow_net list: %v", m)
	}
	m = seatbeltMissing(&Policy{Net: NetList, NetAllow: []string{"a.example:443"}, Runtime: RuntimeNode}, "/Users/a/index.js")
	if !strings.Contains(m[LayerNetNames], "not by name") {
		t.Errorf("net-names: %q", m[LayerNetNames])
	}
	if !strings.Contains(m[LayerWriteXorExec], `runtime "node"`) {
		t.Errorf("write-xor-exec under runtime node: %q", m[LayerWriteXorExec])
	}
}

// TestSeatbeltCommand: the plugin's command becomes the darwin stage's,
// with the environment scrubbed as on Linux and the sandbox's HOME,
// TMPDIR and PATH, its pipes and extra files kept.
func TestSeatbeltCommand(t *testing.T) {
	extra := os.Stdin
	cmd := &exec.Cmd{
		Path: "/Users/a/echo", Args: []string{"echo", "-v"},
		Env:        []string{"SECRET=1", "PLUGIN_MIN_PORT=1", "COOKIE=c", "LANG=C", "HOME=/Users/a"},
		ExtraFiles: []*os.File{extra},
	}
	seatbeltCommand(cmd, "/usr/local/bin/plughost", []string{"COOKIE"}, &Policy{Env: []string{"LANG"}, Files: 99}, "/run/echo-1.sb", "/Users/a/echo", "/d", "/run/echo-1")
	if got, want := strings.Join(cmd.Env, " "), "PLUGIN_MIN_PORT=1 COOKIE=c LANG=C HOME=/d TMPDIR=/run/echo-1 PATH="+PluginPATH; got != want {
		t.Errorf("env = %q\nwant  %q", got, want)
	}
	if got := strings.Join(cmd.Args, " "); got != "/usr/local/bin/plughost "+StageArg+" seatbelt-exec 99 /usr/bin/sandbox-exec -f /run/echo-1.sb /Users/a/echo -v" {
		t.Errorf("args = %q", got)
	}
	if cmd.Path != "/usr/local/bin/plughost" || len(cmd.ExtraFiles) != 1 || cmd.ExtraFiles[0] != extra {
		t.Errorf("path %q, extra files %v", cmd.Path, cmd.ExtraFiles)
	}
}
