package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckVersion(t *testing.T) {
	for _, v := range []string{"v0.4.0", "v1.2.3-rc.1", "v1.0.0+build.5", "v10.20.30"} {
		if err := CheckVersion(v); err != nil {
			t.Errorf("CheckVersion(%q) = %v, want nil", v, err)
		}
	}
	for _, v := range []string{"", "0.4.0", "v1", "v1.2", "v01.2.3", "v1.2.3.4", "latest", "14158fb", "v1.2.3-", "v1.2.3-rc..1"} {
		if err := CheckVersion(v); err == nil || !strings.Contains(err.Error(), "not a semantic version") {
			t.Errorf("CheckVersion(%q) = %v, want an error saying it is not a semantic version", v, err)
		}
	}
}

// gitRepo makes a repository with one commit in a temp directory.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	runGit(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", "go.mod")
	runGit(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first", "--date=2026-11-01T12:00:00Z")
	return dir
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE=2026-11-01T12:00:00Z", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestReadHeadAndTag: a clean tree gives its commit and the commit's
// time; a changed or an untracked file is refused, naming it; Tag makes
// an annotated tag on the commit and refuses one that exists.
func TestReadHeadAndTag(t *testing.T) {
	ctx := context.Background()
	repo := gitRepo(t)
	head, err := ReadHead(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if want := runGit(t, repo, "rev-parse", "HEAD"); head.Commit != want || head.Time.Unix() != 1793534400 {
		t.Errorf("ReadHead = %s at %d, want %s at 1793534400", head.Commit, head.Time.Unix(), want)
	}
	for _, dirty := range []string{"go.mod", "new.go"} {
		if err := os.WriteFile(filepath.Join(repo, dirty), []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadHead(ctx, repo); err == nil || !strings.Contains(err.Error(), "dirty") || !strings.Contains(err.Error(), dirty) {
			t.Errorf("with %s changed: ReadHead err = %v, want one saying the tree is dirty, naming it", dirty, err)
		}
		runGit(t, repo, "checkout", "-q", "--", ".")
		_ = os.Remove(filepath.Join(repo, "new.go"))
	}
	if err := Tag(ctx, repo, "v0.4.0", head.Commit); err != nil {
		t.Fatal(err)
	}
	if kind := runGit(t, repo, "cat-file", "-t", "v0.4.0"); kind != "tag" {
		t.Errorf("v0.4.0 is a %s, want an annotated tag", kind)
	}
	if target := runGit(t, repo, "rev-parse", "v0.4.0^{commit}"); target != head.Commit {
		t.Errorf("v0.4.0 points at %s, want %s", target, head.Commit)
	}
	if err := Tag(ctx, repo, "v0.4.0", head.Commit); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second v0.4.0: err = %v, want git's 'already exists'", err)
	}
}
