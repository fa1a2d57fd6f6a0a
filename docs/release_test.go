package docs

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plughost/plughost/internal/release"
)

// The README's verify block, between these markers: the lines a user runs
// on a downloaded release.
const (
	verifyStart = "<!-- verify"
	verifyEnd   = "<!-- /verify -->"
)

// TestReadmeVerifiesARelease runs the README's verify lines, as written,
// in a directory holding a release the way make release writes it
// (SHA256SUMS by release.WriteSums, SHA256SUMS.sig by release.Sign) but
// signed with a test key, and release/allowed_signers with the project
// key swapped for the test key's. They pass; then, after one byte of the
// archive changes, the checksum line fails, and after SHA256SUMS changes,
// the signature line fails.
func TestReadmeVerifiesARelease(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), verifyStart)
	if ok {
		block, _, ok = strings.Cut(block, verifyEnd)
	}
	blocks, _ := split(block)
	if !ok || len(blocks) != 1 || blocks[0].lang != "sh" {
		t.Fatalf("README.md has no ```sh block between %q and %q", verifyStart, verifyEnd)
	}
	lines := strings.Split(strings.TrimSpace(blocks[0].body), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ssh-keygen -Y verify") || !strings.HasPrefix(lines[1], "sha256sum -c") {
		t.Fatalf("the verify block is %q: want the signature line, the checksum line, the unpacking line", lines)
	}

	dir := t.TempDir()
	archive := filepath.Join(dir, "plughost_v0.4.0_linux_amd64.tar.gz")
	writeTestArchive(t, archive, "plughost_v0.4.0_linux_amd64/plughost")
	if err := release.WriteSums(dir, []string{filepath.Base(archive)}); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	if err := release.Sign(context.Background(), dir, key); err != nil {
		t.Fatal(err)
	}
	signers, err := os.ReadFile("../release/allowed_signers")
	if err != nil {
		t.Fatal(err)
	}
	testPub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(signers))
	if len(fields) != 4 || fields[1] != `namespaces="file"` || fields[2] != "ssh-ed25519" {
		t.Fatalf("release/allowed_signers = %q: want one line IDENTITY namespaces=\"file\" ssh-ed25519 KEY", signers)
	}
	if !strings.Contains(lines[0], "-I "+fields[0]+" ") {
		t.Errorf("the README verifies identity %q? its line is %q", fields[0], lines[0])
	}
	testSigners := strings.Join(fields[:2], " ") + " " + strings.Join(strings.Fields(string(testPub))[:2], " ") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "allowed_signers"), []byte(testSigners), 0o644); err != nil {
		t.Fatal(err)
	}

	sh := func(line string) error {
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("%s: %v\n%s", line, err, out)
		}
		return err
	}
	for _, line := range lines {
		if err := sh(line); err != nil {
			t.Fatalf("the README's line failed on a good release: %s", line)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "plughost_v0.4.0_linux_amd64", "plughost")); err != nil {
		t.Errorf("after the README's lines: %v", err)
	}

	writeTestArchive(t, archive, "plughost_v0.4.0_linux_amd64/plughost-changed")
	if sh(lines[1]) == nil {
		t.Error("the checksum line accepted a changed archive")
	}
	if err := release.WriteSums(dir, []string{filepath.Base(archive)}); err != nil { // the new archive's sum, unsigned
		t.Fatal(err)
	}
	if sh(lines[0]) == nil {
		t.Error("the signature line accepted a SHA256SUMS that is not the signed one")
	}
}

// writeTestArchive writes a tar.gz holding one small program at name.
func writeTestArchive(t *testing.T, path, name string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	body := []byte("#!/bin/sh\necho plughost\n")
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Close() error }{tw, gz, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
