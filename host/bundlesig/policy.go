package bundlesig

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"
)

// maxRootsFile bounds a trusted_roots file: a PEM bundle of a few hundred
// certificates.
const maxRootsFile = 4 << 20

// Policy is what the operator asks of bundle signatures (the
// configuration's trust { bundles { trusted_roots, require_signature } }).
type Policy struct {
	// Roots are the trusted roots; nil when none are named.
	Roots *x509.CertPool
	// Require refuses unsigned bundles.
	Require bool
}

// NewPolicy reads the PEM files of trusted roots (each one or more
// CERTIFICATE blocks, nothing else) into a Policy. Requiring signatures
// without a root is an error: nothing could pass.
func NewPolicy(rootFiles []string, require bool) (*Policy, error) {
	p := &Policy{Require: require}
	if require && len(rootFiles) == 0 {
		return nil, errors.New("require_signature needs trusted_roots: the certificate authorities whose bundles may run")
	}
	for _, f := range rootFiles {
		certs, err := readRoots(f)
		if err != nil {
			return nil, err
		}
		if p.Roots == nil {
			p.Roots = x509.NewCertPool()
		}
		for _, c := range certs {
			p.Roots.AddCert(c)
		}
	}
	return p, nil
}

// readRoots reads one trusted_roots file.
func readRoots(path string) ([]*x509.Certificate, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("trusted_roots: %w", err)
	}
	if info.Size() > maxRootsFile {
		return nil, fmt.Errorf("trusted_roots: %s is %d bytes, more than the %d a file of root certificates may hold", path, info.Size(), maxRootsFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("trusted_roots: %w", err)
	}
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("trusted_roots: %s holds a %q PEM block; it must hold only certificates", path, block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("trusted_roots: %s: %w", path, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("trusted_roots: %s holds no PEM certificate", path)
	}
	return certs, nil
}

// Verdict is what Check found.
type Verdict struct {
	// Archive is the zip archive: what to unpack.
	Archive []byte
	// Signer is who signed the bundle; nil when unsigned.
	Signer *Signer
	// Trusted reports that Signer chains to a trusted root. A signed
	// bundle checked with no trusted roots named is not: its signature
	// matches its bytes, its signer's name is only its own claim.
	Trusted bool
}

// String says what the verdict is, for logs and the install's summary.
func (v *Verdict) String() string {
	switch {
	case v.Signer == nil:
		return "unsigned"
	case v.Trusted:
		return "signed by " + v.Signer.Subject + " (verified against the trusted roots)"
	}
	return "signed by " + v.Signer.Subject + " (not verified: no trusted_roots are configured)"
}

// Check reads the bundle file b and applies the policy at now:
//
//   - a malformed signature block is refused;
//   - an unsigned bundle passes, unless signatures are required;
//   - a signed bundle must be verified against the trusted roots when any
//     are named (a bad or untrusted signature is refused, never treated
//     as no signature); when none are, its signature must still match
//     its bytes (a tampered signed bundle is refused), and the verdict
//     says its signer is not verified.
func (p *Policy) Check(b []byte, now time.Time) (*Verdict, error) {
	archive, sig, err := Split(b)
	if err != nil {
		return nil, err
	}
	if sig == nil {
		if p.Require {
			return nil, errors.New("the bundle is not signed, and require_signature is set")
		}
		return &Verdict{Archive: archive}, nil
	}
	if p.Roots == nil {
		signer, err := CheckIntegrity(archive, sig)
		if err != nil {
			return nil, err
		}
		return &Verdict{Archive: archive, Signer: signer}, nil
	}
	signer, err := Verify(archive, sig, &VerifyOptions{Roots: p.Roots, Now: now})
	if err != nil {
		return nil, err
	}
	return &Verdict{Archive: archive, Signer: signer, Trusted: true}, nil
}
