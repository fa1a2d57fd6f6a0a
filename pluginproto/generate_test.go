package pluginproto_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestGeneratedCodeIsFresh regenerates internal/pluginpb (at the module root) from proto/plugin.proto
// as go generate does (internal/protogen: the compiler in Go, the generators
// pinned by the tool directives in go.mod), and fails when the result
// differs from the checked-in code.
func TestGeneratedCodeIsFresh(t *testing.T) {
	out := t.TempDir()
	run(t, "go", "run", "./internal/protogen", "-I", "proto", "-out", out, "plugin.proto")

	want, got := readDir(t, out), readDir(t, filepath.Join("..", "internal", "pluginpb"))
	for _, name := range sortedKeys(want, got) {
		switch w, g := want[name], got[name]; {
		case w == nil:
			t.Errorf("internal/pluginpb/%s is not generated from proto/plugin.proto; remove it", name)
		case g == nil:
			t.Errorf("internal/pluginpb/%s is missing; run `make proto` (or `go generate` in pluginproto/)", name)
		case !bytes.Equal(w, g):
			t.Errorf("internal/pluginpb/%s is stale: proto/plugin.proto or the pinned generators changed; run `make proto` (or `go generate` in pluginproto/)", name)
		}
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string][]byte)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

func sortedKeys(maps ...map[string][]byte) []string {
	var keys []string
	for _, m := range maps {
		for k := range m {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}
