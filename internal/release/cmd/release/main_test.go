package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo makes a git repository with one commit and no plughost in it: the
// command stops at its checks, or fails at its build.
func repo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// TestReleaseChecksFirst: a version that is not semver and a dirty tree
// are refused before anything is built or tagged, and a release that
// fails after tagging removes its tag.
func TestReleaseChecksFirst(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	release := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, append([]string{"-source", dir, "-out", filepath.Join(dir, "dist")}, args...), &out, &out)
		return out.String(), err
	}
	if _, err := release("-version", "0.4", "-tag"); err == nil || !strings.Contains(err.Error(), `version "0.4" is not a semantic version`) {
		t.Errorf("VERSION=0.4: err = %v, want a refusal naming it", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stray.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := release("-version", "v0.4.0", "-tag"); err == nil || !strings.Contains(err.Error(), "dirty") || !strings.Contains(err.Error(), "stray.go") {
		t.Errorf("a dirty tree: err = %v, want a refusal naming stray.go", err)
	}
	if err := os.Remove(filepath.Join(dir, "stray.go")); err != nil {
		t.Fatal(err)
	}
	// A clean tree with no plughost to build: the tag is made, the build
	// fails, the tag and the release directory are gone.
	if _, err := release("-version", "v0.4.0", "-tag", "-targets", "linux/amd64"); err == nil || !strings.Contains(err.Error(), "go build for linux/amd64") {
		t.Errorf("a tree with no plughost: err = %v, want go build's failure", err)
	}
	if out, _ := exec.Command("git", "-C", dir, "tag", "--list").Output(); len(out) != 0 {
		t.Errorf("after a failed release the tags are %q, want none", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "dist")); !os.IsNotExist(err) {
		t.Errorf("the failed release left its directory behind (stat: %v)", err)
	}
}
