package mcpb

import (
	"archive/zip"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// manifestJSON is a valid manifest of a node server with every kind of
// user_config.
const manifestJSON = `{
  "manifest_version": "0.3",
  "name": "files",
  "version": "1.0.0",
  "description": "a test bundle",
  "author": {"name": "Test"},
  "server": {
    "type": "node",
    "entry_point": "server/index.js",
    "mcp_config": {
      "command": "node",
      "args": ["${__dirname}/server/index.js", "--root=${HOME}${/}x", "${user_config.dirs}"],
      "env": {"TOKEN": "${user_config.token}", "LEVEL": "${user_config.level}", "DEBUG": "${user_config.debug}", "UNKNOWN": "${FOO}"},
      "platform_overrides": {"win32": {"command": "node.exe"}}
    }
  },
  "tools": [{"name": "read_file"}],
  "compatibility": {"platforms": ["linux", "darwin"], "runtimes": {"node": ">=16.0.0"}},
  "user_config": {
    "dirs": {"type": "directory", "title": "Dirs", "description": "d", "multiple": true, "required": true},
    "token": {"type": "string", "title": "Token", "description": "t", "sensitive": true},
    "level": {"type": "number", "title": "Level", "description": "l", "default": 3, "min": 1, "max": 5},
    "debug": {"type": "boolean", "title": "Debug", "description": "b", "default": false},
    "config": {"type": "file", "title": "Config", "description": "f"}
  }
}`

// zipOf builds a zip archive of the given entries, in order.
func zipOf(t *testing.T, entries ...func(*zip.Writer)) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		e(w)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// file is an entry of a regular file, mode 0644 unless given.
func file(name, content string, mode ...fs.FileMode) func(*zip.Writer) {
	return func(w *zip.Writer) {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		h.SetMode(append(mode, 0o644)[0])
		f, err := w.CreateHeader(h)
		if err != nil {
			panic(err)
		}
		f.Write([]byte(content))
	}
}

// valid is a bundle that unpacks.
func valid(t *testing.T, more ...func(*zip.Writer)) []byte {
	return zipOf(t, append([]func(*zip.Writer){file(ManifestName, manifestJSON), file("server/index.js", "console.log(1)\n")}, more...)...)
}

func TestUnpackWritesTheTreeAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b", "sha")
	m, tree, err := Unpack(valid(t, file("bin/tool", "#!/bin/sh\n", 0o755)), dir, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "files" || m.ManifestVersion != "0.3" || !strings.HasPrefix(tree, "sha256:") {
		t.Fatalf("manifest %+v tree %q", m, tree)
	}
	for name, want := range map[string]fs.FileMode{"server/index.js": 0o444, "bin/tool": 0o555} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v mode %v, want %v", name, err, fi.Mode().Perm(), want)
		}
	}
	if again, err := TreeDigest(dir, Limits{}); err != nil || again != tree {
		t.Fatalf("tree digest %q %v, unpacked %q", again, err, tree)
	}
	left, _ := os.ReadDir(filepath.Dir(dir))
	if len(left) != 1 {
		t.Fatalf("left beside the bundle: %v", left)
	}
}

func TestUnpackRefusesHostileArchives(t *testing.T) {
	symlink := func(w *zip.Writer) {
		h := &zip.FileHeader{Name: "server/link"}
		h.SetMode(fs.ModeSymlink | 0o777)
		f, _ := w.CreateHeader(h)
		f.Write([]byte("../../../etc/passwd"))
	}
	device := func(w *zip.Writer) {
		h := &zip.FileHeader{Name: "dev"}
		h.SetMode(fs.ModeDevice | 0o644)
		w.CreateHeader(h)
	}
	bomb := func(w *zip.Writer) {
		h := &zip.FileHeader{Name: "zeros", Method: zip.Deflate}
		f, _ := w.CreateHeader(h)
		f.Write(make([]byte, 64<<20)) // 64 MiB of zeros compress about 1000:1
	}
	many := func(w *zip.Writer) {
		for i := range 30 {
			file("f/"+strings.Repeat("x", i+1), "")(w)
		}
	}
	for _, c := range []struct {
		name    string
		archive []byte
		lim     Limits
		want    string
	}{
		{"dotdot", valid(t, file("../evil", "x")), Limits{}, `".." path`},
		{"dotdot inside", valid(t, file("server/../../evil", "x")), Limits{}, `".." path`},
		{"absolute", valid(t, file("/tmp/evil", "x")), Limits{}, "absolute path"},
		{"drive", valid(t, file("C:/evil", "x")), Limits{}, "absolute path"},
		{"backslash", valid(t, file(`..\evil`, "x")), Limits{}, "backslash"},
		{"symlink", valid(t, symlink), Limits{}, "symbolic link"},
		{"device", valid(t, device), Limits{}, "not a regular file"},
		{"bomb", valid(t, bomb), Limits{}, "zip bomb"},
		{"too big", valid(t, file("big", strings.Repeat("ab", 600))), Limits{MaxFile: 1000}, "over the limit of 1000 for one file"},
		{"total", valid(t, file("a", strings.Repeat("a", 900)), file("b", strings.Repeat("b", 900))), Limits{MaxTotal: 1500}, "over the limit of 1500 bytes"},
		{"count", valid(t, many), Limits{MaxFiles: 20}, "32 entries, over the limit of 20"},
		{"twice", valid(t, file("Server/index.js", "x")), Limits{}, "holds it twice"},
		{"no manifest", zipOf(t, file("server/index.js", "x")), Limits{}, "no manifest.json"},
		{"no entry point", zipOf(t, file(ManifestName, manifestJSON)), Limits{}, "entry_point"},
		{"not a zip", []byte("hello"), Limits{}, "not a zip archive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			_, _, err := Unpack(c.archive, filepath.Join(parent, "sha"), c.lim, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			if left, _ := os.ReadDir(parent); len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
		})
	}
}

func TestUnpackRefusesAWrongPlatformBeforeWriting(t *testing.T) {
	m := strings.Replace(manifestJSON, `["linux", "darwin"]`, `["win32"]`, 1)
	parent := t.TempDir()
	accept := func(m *Manifest) error { return m.Compatible(Host{Platform: "linux", Node: "22.1.0"}) }
	_, _, err := Unpack(zipOf(t, file(ManifestName, m), file("server/index.js", "")), filepath.Join(parent, "sha"), Limits{}, accept)
	if err == nil || err.Error() != "the bundle runs on win32 only, and this host is linux" {
		t.Fatalf("error %v", err)
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

func TestCompatibleRuntimes(t *testing.T) {
	m, err := ParseManifest([]byte(manifestJSON))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		h    Host
		want string
	}{
		{Host{Platform: "linux", Node: "22.1.0"}, ""},
		{Host{Platform: "linux", Node: "14.2.0"}, "the bundle needs node >=16.0.0, and the sandbox's is 14.2.0"},
		{Host{Platform: "linux"}, "the bundle needs node >=16.0.0, and the sandbox has no node"},
		{Host{Platform: "win32", Node: "22.1.0"}, "the bundle runs on linux, darwin only, and this host is win32"},
	} {
		err := m.Compatible(c.h)
		if got := fmtErr(err); got != c.want {
			t.Errorf("%+v: %q, want %q", c.h, got, c.want)
		}
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestInRange(t *testing.T) {
	for _, c := range []struct {
		v, r string
		want bool
	}{
		{"22.1.0", ">=18.0.0", true}, {"16.9.0", ">=18", false}, {"3.11.7", ">=3.8 <4", true}, {"4.0.0", ">=3.8 <4", false},
		{"3.11.7", "^3.10", true}, {"3.9.1", "^3.10", false}, {"1.2.9", "~1.2.3", true}, {"1.3.0", "~1.2.3", false},
		{"0.2.5", "^0.2.3", true}, {"0.3.0", "^0.2.3", false}, {"20.1.0", "18 || 20", true}, {"19.0.0", "18 || 20", false},
		{"22.0.0", "*", true}, {"18.5.0", "18.x", true}, {"17.0.0", "16.0.0 - 17.0.0", true}, {"17.0.1", "16.0.0 - 17.0.0", false},
		{"18.3.0", ">18.2", true}, {"18.2.5", ">18.2", false}, {"18.2.5", "<=18.2", true}, {"20.0.0", ">= 18", true},
	} {
		got, err := InRange(c.v, c.r)
		if err != nil || got != c.want {
			t.Errorf("InRange(%q, %q) = %v, %v; want %v", c.v, c.r, got, err, c.want)
		}
	}
	if _, err := InRange("20.0.0", ">=banana"); err == nil {
		t.Error("a range that is no range: no error")
	}
}

func TestParseManifestFollowsTheSchema(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"no version", `"manifest_version": "0.3",`, ``, "manifest_version (none) is missing"},
		{"future version", `"manifest_version": "0.3"`, `"manifest_version": "9.9"`, `manifest_version "9.9" is missing or not one this host knows`},
		{"unknown member", `"name": "files",`, `"name": "files", "colour": "red",`, "does not follow the manifest schema 0.3"},
		{"uv in 0.3", `"type": "node"`, `"type": "uv"`, "/server/type"},
		{"entry point outside", `"entry_point": "server/index.js"`, `"entry_point": "../index.js"`, "is not a path inside the bundle"},
		{"bad default", `"default": 3,`, `"default": "three",`, `user_config.level: default: "three" is not a number`},
		{"default over max", `"default": 3,`, `"default": 9,`, "above its max 5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(strings.Replace(manifestJSON, c.from, c.to, 1)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	uv := strings.NewReplacer(`"0.3"`, `"0.4"`, `"type": "node"`, `"type": "uv"`).Replace(manifestJSON)
	if m, err := ParseManifest([]byte(uv)); err != nil || m.Server.Type != TypeUV {
		t.Fatalf("a uv server in manifest 0.4: %v", err)
	}
	old := strings.Replace(manifestJSON, `"manifest_version": "0.3"`, `"dxt_version": "0.3"`, 1)
	if m, err := ParseManifest([]byte(old)); err != nil || m.ManifestVersion != "0.3" {
		t.Fatalf("dxt_version: %v", err)
	}
}

func TestLaunchReplacesVariables(t *testing.T) {
	m, err := ParseManifest([]byte(manifestJSON))
	if err != nil {
		t.Fatal(err)
	}
	vals := Values{}
	for k, v := range map[string]any{"dirs": []any{"/srv/a", "/srv/b"}, "token": "s3cret", "debug": "true"} {
		if vals[k], err = m.Value(k, v); err != nil {
			t.Fatal(err)
		}
	}
	l, err := m.Launch("/state/bundles/files/abc", "linux", vals)
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"/state/bundles/files/abc/server/index.js", "--root=${HOME}/x", "/srv/a", "/srv/b"}
	if l.Command != "node" || !slices.Equal(l.Args, wantArgs) {
		t.Fatalf("launch %q %q, want node %q", l.Command, l.Args, wantArgs)
	}
	wantEnv := map[string]string{"TOKEN": "s3cret", "LEVEL": "3", "DEBUG": "true", "UNKNOWN": "${FOO}"}
	for k, v := range wantEnv {
		if l.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, l.Env[k], v)
		}
	}
	if w, _ := m.Launch("/b", "win32", vals); w.Command != "node.exe" {
		t.Errorf("win32 override: command %q", w.Command)
	}
	var missing *MissingError
	if _, err := m.Launch("/b", "linux", Values{}); !errors.As(err, &missing) || !slices.Equal(missing.Keys, []string{"dirs"}) ||
		!strings.Contains(err.Error(), "plughost install") {
		t.Fatalf("required dirs not given: %v", err)
	}
	for k, v := range map[string]any{"level": 9.0, "debug": "maybe", "token": []any{"a", "b"}, "nope": "x"} {
		if _, err := m.Value(k, v); err == nil {
			t.Errorf("user_config %s = %v accepted", k, v)
		}
	}
	dirs, files, err := m.Paths(Values{"dirs": {"/srv/a/", "/srv/b"}, "config": {"/etc/x.conf"}, "token": {"/not/a/path"}})
	if err != nil || !slices.Equal(dirs, []string{"/srv/a", "/srv/b"}) || !slices.Equal(files, []string{"/etc/x.conf"}) {
		t.Fatalf("paths %q %q %v", dirs, files, err)
	}
	if _, _, err := m.Paths(Values{"dirs": {"relative"}}); err == nil {
		t.Fatal("a relative directory: no error")
	}
}

func TestEnsureChecksTheUnpackedTree(t *testing.T) {
	root := t.TempDir()
	sha := strings.Repeat("ab", 32)
	archive := valid(t)
	in, _, err := Ensure(root, sha, archive, "unsigned", Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again, _, err := Ensure(root, sha, nil, "", Limits{}, nil); err != nil || again.Tree != in.Tree {
		t.Fatalf("second Ensure: %v", err)
	}
	js := filepath.Join(in.Dir, "server", "index.js")
	os.Chmod(js, 0o644)
	if err := os.WriteFile(js, []byte("evil()"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Ensure(root, sha, archive, "", Limits{}, nil); err == nil || !strings.Contains(err.Error(), "changed since it was unpacked") {
		t.Fatalf("a changed tree: %v", err)
	}
	os.Remove(in.Dir + ".json") // as a crash before the record leaves it
	if _, _, err := Ensure(root, sha, archive, "", Limits{}, nil); err != nil {
		t.Fatalf("unpacked again without a record: %v", err)
	}
	other := strings.Repeat("cd", 32)
	if _, _, err := Ensure(root, other, archive, "", Limits{}, nil); err != nil {
		t.Fatal(err)
	}
	for _, copyOf := range []string{sha, other} { // install's copies of the bundle files
		if err := os.WriteFile(filepath.Join(root, copyOf+".mcpb"), archive, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if err := Prune(root, other); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(root)
	if len(left) != 4 || left[0].Name() != ".lock" || left[1].Name() != other || left[2].Name() != other+".json" || left[3].Name() != other+".mcpb" {
		t.Fatalf("after prune: %v", left)
	}
}

// TestEnsureConcurrently: starts of the same bundle at once (a serve and
// an approve) unpack it once and all get the whole tree.
func TestEnsureConcurrently(t *testing.T) {
	root, sha, archive := t.TempDir(), strings.Repeat("ef", 32), valid(t)
	errs := make(chan error, 8)
	trees := make(chan string, 8)
	for range 8 {
		go func() {
			in, _, err := Ensure(root, sha, archive, "", Limits{}, nil)
			if err == nil {
				trees <- in.Tree
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	first := <-trees
	for range 7 {
		if tr := <-trees; tr != first {
			t.Fatalf("trees differ: %s %s", first, tr)
		}
	}
}
