package release

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReleaseIsReproducible builds one target, windows/amd64 (a cross
// build on every CI machine), of plughost and the echo plugin from two
// copies of this module at paths of different lengths, and compares the
// archives byte for byte.
//
// The two builds share the go command's cache, which does not make the
// check trivial: the cache is keyed by every input that can reach the
// output, so what could make the copies differ misses it. Without
// -trimpath, the package directory is part of every compile's key, so the
// second copy compiles afresh and the paths in its binary differ; an
// -ldflags value that changed per build (a time, a path) would change the
// link's key. What the shared cache cannot catch is the compiler being
// nondeterministic on equal inputs, which Go's own tests guard. The
// archive step runs afresh both times (with the archives' mtime taken from
// the clock instead of Options.Time, this test fails). The target is
// windows/amd64 because make test's cross vet (GOOS=windows go vet
// -trimpath) compiles the same packages with the same flags first, so
// this test only links and compresses: 42 s and 73 CPU seconds after that
// vet from an empty cache (/usr/bin/time), where on its own it compiled
// plughost's packages for its target afresh (several CPU minutes).
func TestReleaseIsReproducible(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	var archives [][]byte
	for _, dir := range []string{filepath.Join(base, "a"), filepath.Join(base, "second", "copy of plughost")} {
		copyModule(t, root, dir)
		out := filepath.Join(dir, "dist")
		names, err := Build(context.Background(), Options{Source: dir, Out: out, Version: "v0.0.0-test", Commit: "0123456789abcdef",
			Time: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), Targets: []Target{{"windows", "amd64"}}, Plugins: []string{"echo"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 1 || names[0] != "plughost_v0.0.0-test_windows_amd64.zip" {
			t.Fatalf("Build wrote %q, want [plughost_v0.0.0-test_windows_amd64.zip]", names)
		}
		b, err := os.ReadFile(filepath.Join(out, names[0]))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(base)) {
			t.Errorf("the archive built in %s holds that path", dir)
		}
		archives = append(archives, b)
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Errorf("the two builds' archives differ (%d and %d bytes): the release is not reproducible", len(archives[0]), len(archives[1]))
	}
}

// copyModule copies the module at root to dir: every file but the tests,
// their testdata, the nested modules and what is not source (.git,
// node_modules, bin, dist).
func copyModule(t *testing.T, root, dir string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "bin", "dist", "testdata":
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		if !d.Type().IsRegular() || strings.HasSuffix(d.Name(), "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
