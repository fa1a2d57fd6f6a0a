package bundlesig

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plughost/plughost/internal/mcpbcli"
)

// The bundles here are made as an author makes them: `mcpb pack` of a
// small server's directory, `mcpb sign` with a certificate and key, from
// the real @anthropic-ai/mcpb CLI (internal/mcpbcli, 2.1.2).

var (
	packOnce sync.Once
	packed   []byte
)

// packedBundle writes a bundle `mcpb pack` made (once per test binary)
// into a new file of the test's and returns its path.
func packedBundle(t testing.TB) string {
	t.Helper()
	packOnce.Do(func() {
		src := t.TempDir()
		write(t, filepath.Join(src, "manifest.json"), []byte(`{"manifest_version": "0.3", "name": "hello", "version": "1.0.0",
  "description": "says hello", "author": {"name": "Acme"},
  "server": {"type": "node", "entry_point": "server.js", "mcp_config": {"command": "node", "args": ["${__dirname}/server.js"]}}}`))
		write(t, filepath.Join(src, "server.js"), []byte("process.stdin.pipe(process.stdout)\n"))
		out := filepath.Join(t.TempDir(), "hello.mcpb")
		if msg, err := mcpbcli.Run(t, "pack", src, out); err != nil {
			t.Fatalf("mcpb pack: %v\n%s", err, msg)
		}
		packed = read(t, out)
	})
	if packed == nil {
		t.Fatal("mcpb pack failed in an earlier test")
	}
	path := filepath.Join(t.TempDir(), "hello.mcpb")
	write(t, path, packed)
	return path
}

// signedBundle is a fresh bundle signed by `mcpb sign` with signer's
// certificate and key, carrying the intermediates' certificates.
func signedBundle(t testing.TB, signer *issued, intermediates ...*issued) string {
	t.Helper()
	path := packedBundle(t)
	args := []string{"sign", path, "--cert", signer.certFile, "--key", signer.keyFile}
	for _, i := range intermediates {
		args = append(args, "--intermediate", i.certFile)
	}
	if msg, err := mcpbcli.Run(t, args...); err != nil {
		t.Fatalf("mcpb sign: %v\n%s", err, msg)
	}
	return path
}

func TestMcpbSignedBundleVerifies(t *testing.T) {
	p := testPKI(t)
	b := read(t, signedBundle(t, p.leaf, p.intermediate))
	archive, sig, err := Split(b)
	if err != nil {
		t.Fatal(err)
	}
	if sig == nil {
		t.Fatal("Split found no signature in a bundle mcpb signed")
	}
	if !bytes.Equal(archive, packed) {
		t.Fatalf("the archive Split returned (%d bytes) is not the bundle mcpb packed (%d bytes)", len(archive), len(packed))
	}
	signer, err := Verify(archive, sig, &VerifyOptions{Roots: pool(p.root.cert)})
	if err != nil {
		t.Fatalf("Verify of a bundle mcpb signed with a leaf of a trusted root: %v", err)
	}
	if signer.Subject != "CN=Acme Bundles,O=Acme" {
		t.Errorf("signer %q, want CN=Acme Bundles,O=Acme", signer.Subject)
	}
	if got := len(signer.Certificates); got != 3 || !signer.Certificates[2].Equal(p.root.cert) {
		t.Errorf("chain of %d certificates, want leaf, intermediate, root", got)
	}
}

func TestUnsignedBundleSplitsWhole(t *testing.T) {
	b := read(t, packedBundle(t))
	archive, sig, err := Split(b)
	if err != nil || sig != nil || !bytes.Equal(archive, b) {
		t.Fatalf("Split of an unsigned bundle: archive of %d bytes (want %d), signature %v, error %v", len(archive), len(b), sig != nil, err)
	}
}

// TestRefused is the proof "a signed bundle verified, a tampered one
// refused", with every other way a signature must not pass; each case
// names the check it needs, and fails without it.
func TestRefused(t *testing.T) {
	p := testPKI(t)
	good := read(t, signedBundle(t, p.leaf, p.intermediate))
	archiveLen := len(packed)
	roots := pool(p.root.cert)
	flip := func(b []byte, i int) []byte {
		c := bytes.Clone(b)
		c[i] ^= 0x01
		return c
	}
	trusted := func(b []byte, now time.Time) error {
		archive, sig, err := Split(b)
		if err != nil {
			return err
		}
		if sig == nil {
			return errors.New("unsigned")
		}
		_, err = Verify(archive, sig, &VerifyOptions{Roots: roots, Now: now})
		return err
	}
	signature := bytes.LastIndex(good, []byte(footer)) - 1 // the last byte of the signature value
	cases := map[string]struct {
		bundle []byte
		now    time.Time
		is     error
		says   string
	}{
		"a byte flipped in the archive":                     {bundle: flip(good, archiveLen/2), is: ErrTampered, says: "changed after it was signed"},
		"a byte flipped in the archive's central directory": {bundle: flip(good, archiveLen-30), is: ErrTampered, says: "changed after it was signed"},
		"a byte flipped in the signature value":             {bundle: flip(good, signature), is: ErrTampered, says: "is not CN=Acme Bundles"},
		"the block truncated":                               {bundle: good[:len(good)-100], is: ErrMalformed, says: "truncated"},
		"the block without its end marker":                  {bundle: good[:len(good)-len(footer)], is: ErrMalformed, says: "truncated"},
		"bytes after the block":                             {bundle: append(bytes.Clone(good), "more"...), is: ErrMalformed, says: "4 bytes after the signature block's MCPB_SIG_END marker"},
		"a length that does not reach the marker":           {bundle: flip(good, archiveLen+len(header)), is: ErrMalformed, says: "no MCPB_SIG_V1 header with a matching length"},
		"bytes between archive and block":                   {bundle: append(append(bytes.Clone(packed), 'x'), good[archiveLen:]...), is: ErrMalformed, says: "1 bytes after its end of central directory record"},
		"not a zip":                                         {bundle: []byte("#!/bin/sh\necho hello\n"), is: ErrMalformed, says: "not a zip archive"},
		"signed by a leaf of an untrusted root": {bundle: read(t, signedBundle(t, p.strangerLeaf)), is: ErrUntrusted,
			says: "the signer CN=Acme Impostor,O=Acme (issued by CN=Stranger Root CA) does not chain to a trusted root"},
		"without the intermediate": {bundle: read(t, signedBundle(t, p.leaf)), is: ErrUntrusted, says: "does not chain to a trusted root"},
		"a leaf for TLS servers":   {bundle: read(t, signedBundle(t, p.tlsLeaf)), is: ErrUntrusted, says: "is not for code signing (extended key usage: serverAuth)"},
		"signed with an expired certificate": {bundle: read(t, signedBundle(t, p.expiredLeaf)), is: ErrUntrusted,
			says: "outside its certificate's validity"},
		"signed while valid, checked after it expired": {bundle: good, now: p.leaf.cert.NotAfter.Add(time.Minute), is: ErrUntrusted,
			says: "the certificate CN=Acme Bundles,O=Acme expired at"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := trusted(c.bundle, c.now)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %q, want one of %q saying %q", err, c.is, c.says)
			}
		})
	}
}

// TestSelfSignedRefused signs with `mcpb sign --self-signed`, the
// certificate mcpb makes itself: refused, since the operator's roots do
// not hold it.
func TestSelfSignedRefused(t *testing.T) {
	p := testPKI(t)
	path := packedBundle(t)
	if msg, err := mcpbcli.Run(t, "sign", path, "--self-signed"); err != nil {
		t.Fatalf("mcpb sign --self-signed: %v\n%s", err, msg)
	}
	archive, sig, err := Split(read(t, path))
	if err != nil || sig == nil {
		t.Fatalf("Split: signature %v, error %v", sig != nil, err)
	}
	_, err = Verify(archive, sig, &VerifyOptions{Roots: pool(p.root.cert)})
	if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "CN=MCPB Self-Signed Certificate,O=MCPB Extensions,C=US is self-signed and not among the trusted roots") {
		t.Fatalf("Verify of a self-signed bundle: %v", err)
	}
	// Its signature does match its bytes: it is whole, only not trusted.
	if signer, err := CheckIntegrity(archive, sig); err != nil || !strings.Contains(signer.Subject, "MCPB Self-Signed") {
		t.Fatalf("CheckIntegrity of a self-signed bundle: %v", err)
	}
}

// TestOpenSSLSignatures checks signatures mcpb does not make but a CMS
// tool can: more than one signer, an attached one, and one openssl makes
// as mcpb would (detached, SHA-256, signed attributes), which verifies.
func TestOpenSSLSignatures(t *testing.T) {
	p := testPKI(t)
	archivePath := packedBundle(t)
	cms := func(t *testing.T, md string, args ...string) []byte {
		t.Helper()
		out := filepath.Join(t.TempDir(), "sig.der")
		args = append([]string{"cms", "-sign", "-binary", "-nosmimecap", "-md", md, "-outform", "DER", "-in", archivePath, "-out", out}, args...)
		if msg, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, msg)
		}
		return read(t, out)
	}
	bundle := func(der []byte) []byte {
		return Join(packed, &Signature{DER: der})
	}
	t.Run("detached, one signer", func(t *testing.T) {
		archive, sig, err := Split(bundle(cms(t, "sha256", "-signer", p.leaf.certFile, "-inkey", p.leaf.keyFile, "-certfile", p.intermediate.certFile)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Verify(archive, sig, &VerifyOptions{Roots: pool(p.root.cert)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("two signers", func(t *testing.T) {
		_, _, err := Split(bundle(cms(t, "sha256", "-signer", p.leaf.certFile, "-inkey", p.leaf.keyFile, "-signer", p.tlsLeaf.certFile, "-inkey", p.tlsLeaf.keyFile)))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "more than one signer") {
			t.Fatalf("Split: %v", err)
		}
	})
	t.Run("attached", func(t *testing.T) {
		_, _, err := Split(bundle(cms(t, "sha256", "-nodetach", "-signer", p.leaf.certFile, "-inkey", p.leaf.keyFile)))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "attached") {
			t.Fatalf("Split: %v", err)
		}
	})
	t.Run("SHA-1", func(t *testing.T) {
		_, _, err := Split(bundle(cms(t, "sha1", "-signer", p.leaf.certFile, "-inkey", p.leaf.keyFile)))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "not SHA-256, SHA-384 or SHA-512") {
			t.Fatalf("Split: %v", err)
		}
	})
}

// Join is Split's inverse: archive with sig's block appended, as mcpb
// writes it.
func Join(archive []byte, sig *Signature) []byte {
	if sig == nil {
		return archive
	}
	out := bytes.Clone(archive)
	out = append(out, header...)
	out = append(out, byte(len(sig.DER)), byte(len(sig.DER)>>8), byte(len(sig.DER)>>16), byte(len(sig.DER)>>24))
	out = append(out, sig.DER...)
	return append(out, footer...)
}

func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
