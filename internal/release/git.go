package release

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/semver"
)

// CheckVersion refuses a version that is not a full semantic version tag
// as Go modules read one: "v", then MAJOR.MINOR.PATCH, then an optional
// -prerelease and +build (v0.4.0, v1.2.3-rc.1). Shorthands semver
// accepts elsewhere (v1, v1.2) are refused: a tag names one release.
func CheckVersion(v string) error {
	core, _, _ := strings.Cut(v, "+")
	if !semver.IsValid(v) || semver.Canonical(v) != core {
		return fmt.Errorf("version %q is not a semantic version tag such as v0.4.0 or v1.2.3-rc.1 (https://semver.org, with a leading v)", v)
	}
	return nil
}

// Head is the commit a release is built from.
type Head struct {
	Commit string    // the full commit hash
	Time   time.Time // the committer time: the archives' mtime
}

// ReadHead returns the repository's HEAD commit and its time, refusing a
// dirty tree: a release is built from a commit, and a changed or
// untracked file (an untracked .go file is compiled in) would make it
// something no commit holds.
func ReadHead(ctx context.Context, repo string) (Head, error) {
	status, err := git(ctx, repo, "status", "--porcelain")
	if err != nil {
		return Head{}, err
	}
	if s := strings.TrimSpace(status); s != "" {
		return Head{}, fmt.Errorf("the tree is dirty: commit or remove these first:\n%s", s)
	}
	out, err := git(ctx, repo, "log", "-1", "--format=%H %ct", "HEAD")
	if err != nil {
		return Head{}, err
	}
	hash, ct, _ := strings.Cut(strings.TrimSpace(out), " ")
	secs, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return Head{}, fmt.Errorf("git log: commit time %q: %w", ct, err)
	}
	return Head{Commit: hash, Time: time.Unix(secs, 0).UTC()}, nil
}

// Tag makes the annotated tag version on commit, refusing one that exists
// already (git tag without -f does). An annotated tag records who made
// the release and when; go and git describe read it like a light one.
func Tag(ctx context.Context, repo, version, commit string) error {
	_, err := git(ctx, repo, "tag", "-a", version, "-m", "plughost "+version, commit)
	return err
}

// SourceArchiveName is the file name of version's source archive.
func SourceArchiveName(version string) string { return "plughost_" + version + "_src.tar.gz" }

// WriteSourceArchive writes commit's tree as out/SourceArchiveName(version),
// under the directory plughost_VERSION_src/: what a Go author builds
// against until the module is published (docs/plugin-authors.md). git
// archive's tar is reproducible (every mtime is the commit's time); it is
// compressed here, as writeTarGz is, with no name or time in the gzip
// header.
func WriteSourceArchive(ctx context.Context, repo, out, version, commit string) (string, error) {
	name := SourceArchiveName(version)
	cmd := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar",
		"--prefix="+strings.TrimSuffix(name, ".tar.gz")+"/", commit)
	var tarball, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &tarball, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git archive: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	f, err := os.OpenFile(filepath.Join(out, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	gz := gzip.NewWriter(f)
	_, err = tarball.WriteTo(gz)
	if cerr := gz.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return name, err
}

// git runs git in repo and returns its standard output; an error carries
// its standard error.
func git(ctx context.Context, repo string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", repo}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// DeleteTag removes the tag version: a release that failed after Tag
// leaves no tag behind.
func DeleteTag(ctx context.Context, repo, version string) error {
	_, err := git(ctx, repo, "tag", "-d", version)
	return err
}
