package bundlesig

import (
	"cmp"
	"crypto/subtle"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors Verify and CheckIntegrity wrap, for callers that tell them
// apart; the message names the cause in full.
var (
	// ErrTampered: the signature does not cover these bytes (the archive
	// or the signed attributes were changed after signing).
	ErrTampered = errors.New("bundle signature does not match the bundle")
	// ErrUntrusted: the signer's certificate does not chain to a trusted
	// root, or the chain is not valid now (expired, not yet valid, not
	// for code signing).
	ErrUntrusted = errors.New("bundle signer not trusted")
)

// VerifyOptions are what Verify checks a signature against.
type VerifyOptions struct {
	// Roots are the certificate authorities the operator trusts to sign
	// bundles (trust { bundles { trusted_roots } }); required.
	Roots *x509.CertPool
	// Now is when the chain must be valid; zero: time.Now.
	Now time.Time
}

// Signer is who signed a bundle.
type Signer struct {
	// Subject is the signer certificate's subject, as in
	// "CN=Acme Signing,O=Acme".
	Subject string
	// Certificates are the signer's certificate first, then the chain
	// Verify built to a root (CheckIntegrity: the certificates the block
	// carries after the signer's).
	Certificates []*x509.Certificate
}

// Verify checks sig over archive against opts.Roots (and the
// intermediates the block carries); it returns the signer. It holds when
//
//   - the signed messageDigest is the digest of exactly archive, and the
//     signer's signature over the signed attributes is valid;
//   - the signer's certificate chains to a root of opts.Roots through the
//     certificates the block carries, valid at opts.Now (not at the
//     signing time the signer claims: without a timestamp authority's
//     countersignature it is only the signer's word, and an expired key
//     could backdate it), for code signing (an extended key usage of
//     code signing or any, or none at all), its key usage, when set,
//     allowing digital signatures;
//   - the signing time, when present, lies within the signer
//     certificate's validity.
//
// Errors name the cause; they wrap ErrTampered or ErrUntrusted.
func Verify(archive []byte, sig *Signature, opts *VerifyOptions) (*Signer, error) {
	if opts == nil || opts.Roots == nil {
		return nil, errors.New("no trusted roots to verify the bundle signature against (trust { bundles { trusted_roots } })")
	}
	if err := checkSignature(archive, sig); err != nil {
		return nil, err
	}
	sd := sig.signed
	leaf := sd.signer
	if leaf.KeyUsage != 0 && leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return nil, fmt.Errorf("%w: the signer's certificate %s does not allow digital signatures (its key usage)", ErrUntrusted, leaf.Subject)
	}
	intermediates := x509.NewCertPool()
	for _, c := range sd.certs {
		if c != leaf {
			intermediates.AddCert(c)
		}
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	chains, err := leaf.Verify(x509.VerifyOptions{
		Roots:         opts.Roots,
		Intermediates: intermediates,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUntrusted, chainError(err, leaf, now))
	}
	return &Signer{Subject: leaf.Subject.String(), Certificates: chains[0]}, nil
}

// CheckIntegrity checks only that sig is a valid signature over archive
// by the certificate it carries: the bundle is as its signer made it.
// It says nothing of who the signer is (anyone can make a certificate
// with any name); Verify does. Errors wrap ErrTampered, ErrMalformed,
// or ErrUntrusted for a signing time outside the signer certificate's
// validity.
func CheckIntegrity(archive []byte, sig *Signature) (*Signer, error) {
	if err := checkSignature(archive, sig); err != nil {
		return nil, err
	}
	sd := sig.signed
	certs := []*x509.Certificate{sd.signer}
	for _, c := range sd.certs {
		if c != sd.signer {
			certs = append(certs, c)
		}
	}
	return &Signer{Subject: sd.signer.Subject.String(), Certificates: certs}, nil
}

// checkSignature checks the digest, the signature and the signing time
// against the signer's validity.
func checkSignature(archive []byte, sig *Signature) error {
	if sig == nil || sig.signed == nil {
		return fmt.Errorf("%w: no signature (use Split to read one)", ErrMalformed)
	}
	sd := sig.signed
	h := sd.digest.New()
	h.Write(archive)
	if subtle.ConstantTimeCompare(h.Sum(nil), sd.messageDigest) != 1 {
		return fmt.Errorf("%w: the archive's %v digest is not the one signed: the bundle was changed after it was signed", ErrTampered, sd.digest)
	}
	if err := sd.signer.CheckSignature(sd.algorithm, sd.signedAttrs, sd.signature); err != nil {
		return fmt.Errorf("%w: the signature over the signed attributes is not %s's: %v", ErrTampered, sd.signer.Subject, err)
	}
	if t := sd.signingTime; !t.IsZero() && (t.Before(sd.signer.NotBefore) || t.After(sd.signer.NotAfter)) {
		return fmt.Errorf("%w: signed at %s, outside its certificate's validity (%s to %s)", ErrUntrusted,
			t.UTC().Format(time.RFC3339), sd.signer.NotBefore.UTC().Format(time.RFC3339), sd.signer.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// chainError says why leaf did not chain to a trusted root at now.
func chainError(err error, leaf *x509.Certificate, now time.Time) string {
	var invalid x509.CertificateInvalidError
	var unknown x509.UnknownAuthorityError
	switch {
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		c := invalid.Cert
		if now.After(c.NotAfter) {
			return fmt.Sprintf("the certificate %s expired at %s (checked at %s)", c.Subject, c.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
		return fmt.Sprintf("the certificate %s is not valid before %s (checked at %s)", c.Subject, c.NotBefore.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case errors.As(err, &invalid) && invalid.Reason == x509.IncompatibleUsage:
		return fmt.Sprintf("the certificate %s is not for code signing (extended key usage: %s)", leaf.Subject, usages(leaf))
	case errors.As(err, &unknown):
		if string(leaf.RawIssuer) == string(leaf.RawSubject) {
			return fmt.Sprintf("the signer %s is self-signed and not among the trusted roots", leaf.Subject)
		}
		return fmt.Sprintf("the signer %s (issued by %s) does not chain to a trusted root", leaf.Subject, leaf.Issuer)
	}
	return err.Error()
}

// usages names a certificate's extended key usages.
func usages(c *x509.Certificate) string {
	names := map[x509.ExtKeyUsage]string{
		x509.ExtKeyUsageServerAuth: "serverAuth", x509.ExtKeyUsageClientAuth: "clientAuth",
		x509.ExtKeyUsageEmailProtection: "emailProtection", x509.ExtKeyUsageTimeStamping: "timeStamping",
		x509.ExtKeyUsageOCSPSigning: "OCSPSigning", x509.ExtKeyUsageCodeSigning: "codeSigning", x509.ExtKeyUsageAny: "any",
	}
	var out []string
	for _, u := range c.ExtKeyUsage {
		out = append(out, cmp.Or(names[u], fmt.Sprint(u)))
	}
	for _, u := range c.UnknownExtKeyUsage {
		out = append(out, u.String())
	}
	return strings.Join(out, ", ")
}
