package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// SumsFile is the checksum file's name; SigFile is its signature's.
const (
	SumsFile = "SHA256SUMS"
	SigFile  = "SHA256SUMS.sig"
)

// SignatureNamespace is the ssh-keygen -Y namespace of the signature:
// "file", the one ssh-keygen documents for signing files, so a signature
// made for another purpose (git commits use "git") cannot pass for it.
const SignatureNamespace = "file"

// WriteSums writes dir/SHA256SUMS: one line per file of names, sorted by
// name, as sha256sum prints it ("HASH  NAME", two spaces: text mode), so
// `sha256sum -c SHA256SUMS` checks the downloaded files.
func WriteSums(dir string, names []string) error {
	var b bytes.Buffer
	for _, n := range slices.Sorted(slices.Values(names)) {
		sum, err := fileSHA256(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	return os.WriteFile(filepath.Join(dir, SumsFile), b.Bytes(), 0o644)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Sign writes dir/SHA256SUMS.sig with `ssh-keygen -Y sign -n file -f key`.
// key is the private key's file, or the public key's when the private
// key is held by ssh-agent (ssh-keygen then asks the agent): a
// passphrase never passes through a command line or this program, since
// ssh-keygen asks for it on the terminal or the agent has it. The
// signature is not reproducible (it is made with a fresh nonce), and
// need not be: it is checked, not compared.
func Sign(ctx context.Context, dir, key string) error {
	sums := filepath.Join(dir, SumsFile)
	cmd := exec.CommandContext(ctx, "ssh-keygen", "-Y", "sign", "-n", SignatureNamespace, "-f", key, sums)
	cmd.Stdin = os.Stdin // a passphrase prompt, when the key has one and no agent holds it
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ssh-keygen -Y sign -f %s: %w: %s", key, err, strings.TrimSpace(stderr.String()))
	}
	return nil // ssh-keygen wrote SHA256SUMS.sig beside SHA256SUMS
}
