package bundlesig

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/internal/mcpbcli"
)

// TestMcpbVerifyDiffers runs `mcpb verify` (2.1.2) on the files plughost
// judges, and logs both verdicts side by side. mcpb's verifier calls
// node-forge's PKCS#7 verify, which node-forge never implemented: it
// throws, mcpb catches and answers "not signed" for every bundle, the
// good one too (anthropics/mcpb #260, #276, #277). Its answers are
// asserted as 2.1.2 gives them, so that a new pin that changes them is
// noticed; plughost's are the point of this package.
func TestMcpbVerifyDiffers(t *testing.T) {
	p := testPKI(t)
	policy, err := NewPolicy([]string{p.root.certFile}, false)
	if err != nil {
		t.Fatal(err)
	}
	good := read(t, signedBundle(t, p.leaf, p.intermediate))
	selfSigned := packedBundle(t)
	if msg, err := mcpbcli.Run(t, "sign", selfSigned, "--self-signed"); err != nil {
		t.Fatalf("mcpb sign --self-signed: %v\n%s", err, msg)
	}
	tampered := bytes.Clone(good)
	tampered[len(packed)/2] ^= 1
	cases := []struct {
		name   string
		bundle []byte
		ours   string // "" accepted, else a part of the error
	}{
		{"signed by a leaf of the trusted root", good, ""},
		{"unsigned", packed, ""},
		{"a byte of the archive flipped", tampered, "changed after it was signed"},
		{"bytes after the signature block", append(bytes.Clone(good), "junk"...), "bytes after the signature block"},
		{"mcpb sign --self-signed", read(t, selfSigned), "self-signed and not among the trusted roots"},
		{"signed by a leaf of another root", read(t, signedBundle(t, p.strangerLeaf)), "does not chain to a trusted root"},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-38s %-40s %s\n", "bundle", "mcpb verify", "plughost")
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "b.mcpb")
		write(t, path, c.bundle)
		out, err := mcpbcli.Run(t, "verify", path)
		theirs := "valid"
		if err != nil {
			theirs = "refused: " + lastLine(out)
		}
		v, ourErr := policy.Check(c.bundle, time.Now())
		ours := ""
		if ourErr != nil {
			ours = "refused: " + ourErr.Error()
		} else {
			ours = "accepted: " + v.String()
		}
		fmt.Fprintf(&table, "%-38s %-40s %s\n", c.name, theirs, ours)
		switch {
		case c.ours == "" && ourErr != nil:
			t.Errorf("%s: plughost refused it: %v", c.name, ourErr)
		case c.ours != "" && (ourErr == nil || !strings.Contains(ourErr.Error(), c.ours)):
			t.Errorf("%s: plughost's verdict %q, want an error saying %q", c.name, ours, c.ours)
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "Extension is not signed") {
			t.Errorf("%s: mcpb verify 2.1.2 answered (%v) %s; it answered \"not signed\" to every bundle when this test was written", c.name, err, out)
		}
	}
	t.Logf("verdicts:\n%s", table.String())
}

// lastLine is the last non-empty line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
