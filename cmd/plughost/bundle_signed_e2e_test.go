package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/internal/mcpbcli"
)

// signingPair writes a root CA and a code-signing leaf it issued (RSA:
// mcpb signs with node-forge, which reads RSA keys only) into dir and
// returns the files: the root's certificate, the leaf's and its key.
func signingPair(t *testing.T, dir string) (rootFile, certFile, keyFile string) {
	t.Helper()
	now := time.Now()
	newKey := func() *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	rootKey, leafKey := newKey(), newKey()
	root := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "plughost test bundle CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	rootDER, err := x509.CreateCertificate(rand.Reader, root, root, &rootKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "Acme Bundles"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, root, &leafKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("root.pem", "CERTIFICATE", rootDER), write("signer.pem", "CERTIFICATE", leafDER),
		write("signer.key", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(leafKey))
}

// TestBundleSigned: a bundle `mcpb sign` signed with a certificate of a
// root the configuration trusts installs, its signer shown; the same
// bundle with one byte of its archive changed is refused, nothing
// installed; with require_signature an unsigned one is refused.
func TestBundleSigned(t *testing.T) {
	t.Parallel()
	src, pkiDir := t.TempDir(), t.TempDir()
	manifest := `{"manifest_version": "0.3", "name": "signed", "version": "1.0.0", "description": "d", "author": {"name": "a"},
  "server": {"type": "node", "entry_point": "server/index.js", "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.js"]}}}`
	unsigned := handBundle(t, src, manifest)
	b, err := os.ReadFile(unsigned)
	if err != nil {
		t.Fatal(err)
	}
	signed := filepath.Join(src, "signed.mcpb")
	if err := os.WriteFile(signed, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rootFile, certFile, keyFile := signingPair(t, pkiDir)
	if out, err := mcpbcli.Run(t, "sign", signed, "--cert", certFile, "--key", keyFile); err != nil {
		t.Fatalf("mcpb sign: %v\n%s", err, out)
	}
	config := filepath.Join(t.TempDir(), "plughost.hcl")
	writeConfig := func(require bool) {
		hcl := fmt.Sprintf("trust {\n  bundles {\n    trusted_roots = [%q]\n    require_signature = %t\n  }\n}\n", rootFile, require)
		if err := os.WriteFile(config, []byte(hcl), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig(false)
	install := func(bundle string) (string, int, string) {
		plugins := t.TempDir()
		out, code := plughostWith(t, []string{"XDG_STATE_HOME=" + t.TempDir()}, "install", bundle, "--plugins", plugins, "--config", config, "--config-out", "-", "--yes")
		return out, code, plugins
	}
	if out, code, _ := install(signed); code != 0 || !strings.Contains(out, "signed by CN=Acme Bundles") || !strings.Contains(out, "verified against the trusted roots") {
		t.Fatalf("plughost install of a signed bundle (exit %d):\n%s", code, out)
	}
	sb, err := os.ReadFile(signed)
	if err != nil {
		t.Fatal(err)
	}
	sb[bytes.Index(sb, []byte("manifest.json"))] ^= 0x20 // one byte of the archive: a file's name in its header
	tampered := filepath.Join(src, "tampered.mcpb")
	if err := os.WriteFile(tampered, sb, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code, plugins := install(tampered)
	if code == 0 || !strings.Contains(out, "nothing installed") {
		t.Fatalf("plughost install of a tampered signed bundle (exit %d):\n%s", code, out)
	}
	if left, _ := os.ReadDir(plugins); len(left) != 0 {
		t.Errorf("left in the plugin directory: %v", left)
	}
	t.Logf("tampered: %s", out)
	writeConfig(true)
	if out, code, _ := install(unsigned); code == 0 || !strings.Contains(out, "the bundle is not signed, and require_signature is set") {
		t.Fatalf("plughost install of an unsigned bundle under require_signature (exit %d):\n%s", code, out)
	}
}
