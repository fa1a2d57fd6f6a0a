package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSumsAndSignature: SHA256SUMS is what `sha256sum -c` checks (sorted
// by name), and Sign's signature passes `ssh-keygen -Y verify` with the
// signer in an allowed_signers file and namespace "file", and fails once
// SHA256SUMS changes.
func TestSumsAndSignature(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, content := range map[string]string{"b.zip": "bee", "a.tar.gz": "ay"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteSums(dir, []string{"b.zip", "a.tar.gz"}); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(dir, SumsFile))
	if err != nil {
		t.Fatal(err)
	}
	want := "69d61997a241e97931db9dd1cfcef218041a752485f5f7956b09766287682da3  a.tar.gz\n" + // sha256 of "ay"
		"62cb81b5904a262ffaeed02abef36bfc540b09f964b8b0b636662f77ffce6714  b.zip\n" // of "bee"
	if string(sums) != want {
		t.Errorf("SHA256SUMS =\n%s\nwant (sorted by name, two spaces)\n%s", sums, want)
	}
	check := exec.Command("sha256sum", "-c", SumsFile)
	check.Dir = dir
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c: %v\n%s", err, out)
	}

	key := testKey(t)
	if err := Sign(ctx, dir, key); err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	signers := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(signers, []byte("release@example.com "+string(pub)), 0o644); err != nil {
		t.Fatal(err)
	}
	verify := func() error {
		cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", "release@example.com", "-n", "file", "-s", filepath.Join(dir, SigFile))
		f, err := os.Open(filepath.Join(dir, SumsFile))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
		return cmd.Run()
	}
	if err := verify(); err != nil {
		t.Fatalf("ssh-keygen -Y verify of a fresh signature: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, SumsFile), append(sums, "0000  c.zip\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := verify(); err == nil {
		t.Error("ssh-keygen -Y verify accepted a changed SHA256SUMS")
	}
}

// testKey makes an ed25519 key pair without a passphrase and returns the
// private key's path.
func testKey(t *testing.T) string {
	t.Helper()
	key := filepath.Join(t.TempDir(), "release_key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test release key", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	return key
}
