package bundlesig

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The test PKI: RSA throughout, since mcpb signs with node-forge, which
// reads RSA keys only.
//
//	root ─ intermediate ─ leaf          (code signing: the good signer)
//	root ─ tlsLeaf                      (server authentication only)
//	root ─ expiredLeaf                  (expired yesterday)
//	otherRoot ─ strangerLeaf            (a CA the operator does not trust)
type pki struct {
	dir                                                    string
	root, otherRoot                                        *issued
	intermediate, leaf, tlsLeaf, expiredLeaf, strangerLeaf *issued
}

// issued is a certificate, its key, and their PEM files.
type issued struct {
	cert              *x509.Certificate
	key               *rsa.PrivateKey
	certFile, keyFile string
}

var (
	pkiOnce   sync.Once
	pkiShared *pki
	pkiErr    error
)

// testPKI makes the PKI once per test binary (RSA keys take a moment),
// in a directory TestMain removes.
func testPKI(t testing.TB) *pki {
	t.Helper()
	pkiOnce.Do(func() { pkiShared, pkiErr = newPKI() })
	if pkiErr != nil {
		t.Fatal(pkiErr)
	}
	return pkiShared
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pkiShared != nil {
		os.RemoveAll(pkiShared.dir)
	}
	os.Exit(code)
}

func newPKI() (*pki, error) {
	dir, err := os.MkdirTemp("", "bundlesig-pki-")
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir}
	now := time.Now()
	ca := func(name string) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: name}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	}
	signer := func(name string, from, to time.Time, eku x509.ExtKeyUsage) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: name, Organization: []string{"Acme"}}, NotBefore: from, NotAfter: to,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{eku}}
	}
	steps := []struct {
		out    **issued
		tmpl   *x509.Certificate
		parent **issued // nil: self-signed
	}{
		{&p.root, ca("Bundle Root CA"), nil},
		{&p.otherRoot, ca("Stranger Root CA"), nil},
		{&p.intermediate, func() *x509.Certificate {
			c := ca("Bundle Signing CA")
			c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}
			return c
		}(), &p.root},
		{&p.leaf, signer("Acme Bundles", now.Add(-time.Hour), now.Add(time.Hour), x509.ExtKeyUsageCodeSigning), &p.intermediate},
		{&p.tlsLeaf, signer("Acme Web", now.Add(-time.Hour), now.Add(time.Hour), x509.ExtKeyUsageServerAuth), &p.root},
		{&p.expiredLeaf, signer("Acme Old", now.Add(-48*time.Hour), now.Add(-24*time.Hour), x509.ExtKeyUsageCodeSigning), &p.root},
		{&p.strangerLeaf, signer("Acme Impostor", now.Add(-time.Hour), now.Add(time.Hour), x509.ExtKeyUsageCodeSigning), &p.otherRoot},
	}
	for i, s := range steps {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, err
		}
		s.tmpl.SerialNumber = big.NewInt(int64(i + 1))
		parent, parentKey := s.tmpl, key
		if s.parent != nil {
			parent, parentKey = (*s.parent).cert, (*s.parent).key
		}
		der, err := x509.CreateCertificate(rand.Reader, s.tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			return nil, err
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, err
		}
		name := filepath.Join(dir, cert.Subject.CommonName)
		is := &issued{cert: cert, key: key, certFile: name + ".pem", keyFile: name + ".key"}
		if err := os.WriteFile(is.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
			return nil, err
		}
		keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
		if err := os.WriteFile(is.keyFile, keyPEM, 0o600); err != nil {
			return nil, err
		}
		*s.out = is
	}
	return p, nil
}

// pool is a CertPool of certs.
func pool(certs ...*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}
