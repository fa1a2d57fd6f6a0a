package bundlesig

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkCheck is the cost of checking a signed 20 MB bundle (a zip of
// stored random bytes, signed by openssl cms as mcpb signs: detached,
// SHA-256, signed attributes) against a trusted root: Split, the digest
// of the archive, the signature, the chain.
//
//	go test -run '^$' -bench Check -benchtime 20x ./host/bundlesig
func BenchmarkCheck(b *testing.B) {
	p := testPKI(b)
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "server/index.js", Method: zip.Store})
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 20<<20)
	rand.Read(payload)
	w.Write(payload)
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	archive := filepath.Join(b.TempDir(), "big.mcpb")
	write(b, archive, zipped.Bytes())
	der := filepath.Join(b.TempDir(), "sig.der")
	if msg, err := exec.Command("openssl", "cms", "-sign", "-binary", "-nosmimecap", "-md", "sha256", "-outform", "DER",
		"-in", archive, "-out", der, "-signer", p.leaf.certFile, "-inkey", p.leaf.keyFile, "-certfile", p.intermediate.certFile).CombinedOutput(); err != nil {
		b.Fatalf("openssl: %v\n%s", err, msg)
	}
	bundle := Join(zipped.Bytes(), &Signature{DER: read(b, der)})
	policy := &Policy{Roots: pool(p.root.cert)}
	b.SetBytes(int64(len(bundle)))
	for b.Loop() {
		if _, err := policy.Check(bundle, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}
