package bundlesig

import (
	"crypto"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// This file reads the CMS SignedData of RFC 5652 that mcpb writes
// (node-forge's pkcs7.createSignedData, detached, with signed
// attributes), strictly: DER only, nothing left over, one signer. It is
// our own (on x/crypto's cryptobyte) rather than a PKCS#7 library's
// because the one maintained for Go (smallstep/pkcs7) ignores an error
// parsing SignedData, accepts BER, re-encodes the signed attributes
// instead of checking the bytes that were signed, does not check the
// contentType attribute, and accepts a chain for any key usage.

// The object identifiers this file meets.
var (
	oidData          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidSignedData    = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 2}
	oidContentType   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 3}
	oidMessageDigest = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 4}
	oidSigningTime   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 5}

	oidSHA256 = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}
	oidSHA384 = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 2}
	oidSHA512 = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 3}

	oidRSA           = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}
	oidSHA256WithRSA = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 11}
	oidSHA384WithRSA = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 12}
	oidSHA512WithRSA = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 13}
	oidECDSASHA256   = asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2}
	oidECDSASHA384   = asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 3}
	oidECDSASHA512   = asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 4}
	oidECPublicKey   = asn1.ObjectIdentifier{1, 2, 840, 10045, 2, 1}
)

// maxCertificates bounds the certificates a block may carry.
const maxCertificates = 16

// signedData is what Verify needs of a SignedData with its one signer.
type signedData struct {
	// certs are the certificates the block carries: the signer's and
	// intermediates, in the block's order.
	certs []*x509.Certificate
	// signer is the certificate the signer info names.
	signer *x509.Certificate
	// digest is the digest algorithm; messageDigest its value over the
	// archive, as signed.
	digest        crypto.Hash
	messageDigest []byte
	// signingTime is the signer's claimed signing time; zero when absent.
	signingTime time.Time
	// signedAttrs is the DER the signature is over: the signed attributes
	// as a SET OF (RFC 5652 section 5.4).
	signedAttrs []byte
	algorithm   x509.SignatureAlgorithm
	signature   []byte
}

// parseSignedData reads a ContentInfo holding a detached SignedData with
// exactly one signer, who signed attributes.
func parseSignedData(der []byte) (*signedData, error) {
	in := cryptobyte.String(der)
	var contentInfo, content cryptobyte.String
	var contentType asn1.ObjectIdentifier
	if !in.ReadASN1(&contentInfo, cbasn1.SEQUENCE) || !in.Empty() {
		return nil, errors.New("the signature is not one DER ContentInfo")
	}
	if !contentInfo.ReadASN1ObjectIdentifier(&contentType) || !contentType.Equal(oidSignedData) {
		return nil, fmt.Errorf("the signature's content type is %v, not signedData", contentType)
	}
	if !contentInfo.ReadASN1(&content, cbasn1.Tag(0).Constructed().ContextSpecific()) || !contentInfo.Empty() {
		return nil, errors.New("the signature's ContentInfo is malformed")
	}
	var sd cryptobyte.String
	if !content.ReadASN1(&sd, cbasn1.SEQUENCE) || !content.Empty() {
		return nil, errors.New("the SignedData is malformed")
	}
	var version int64
	var digestAlgorithms, encap, signerInfos cryptobyte.String
	if !sd.ReadASN1Integer(&version) || !sd.ReadASN1(&digestAlgorithms, cbasn1.SET) || !sd.ReadASN1(&encap, cbasn1.SEQUENCE) {
		return nil, errors.New("the SignedData's version, digest algorithms or content info is malformed")
	}
	var eContentType asn1.ObjectIdentifier
	if !encap.ReadASN1ObjectIdentifier(&eContentType) || !eContentType.Equal(oidData) {
		return nil, fmt.Errorf("the signed content's type is %v, not data", eContentType)
	}
	if !encap.Empty() {
		return nil, errors.New("the signature carries its content (attached); an mcpb signature is detached, over the archive before it")
	}
	var out signedData
	var certSet cryptobyte.String
	var hasCerts bool
	if !sd.ReadOptionalASN1(&certSet, &hasCerts, cbasn1.Tag(0).Constructed().ContextSpecific()) {
		return nil, errors.New("the SignedData's certificates are malformed")
	}
	for !certSet.Empty() {
		var raw cryptobyte.String
		if !certSet.ReadASN1Element(&raw, cbasn1.SEQUENCE) {
			return nil, errors.New("the signature carries something other than an X.509 certificate")
		}
		if len(out.certs) == maxCertificates {
			return nil, fmt.Errorf("the signature carries more than %d certificates", maxCertificates)
		}
		cert, err := x509.ParseCertificate(raw)
		if err != nil {
			return nil, fmt.Errorf("a certificate the signature carries: %w", err)
		}
		out.certs = append(out.certs, cert)
	}
	if !sd.SkipOptionalASN1(cbasn1.Tag(1).Constructed().ContextSpecific()) || !sd.ReadASN1(&signerInfos, cbasn1.SET) || !sd.Empty() {
		return nil, errors.New("the SignedData's signer infos are malformed")
	}
	var si cryptobyte.String
	if !signerInfos.ReadASN1(&si, cbasn1.SEQUENCE) {
		return nil, errors.New("the signature has no signer")
	}
	if !signerInfos.Empty() {
		return nil, errors.New("the signature has more than one signer; an mcpb signature has one")
	}
	if err := out.readSignerInfo(si); err != nil {
		return nil, err
	}
	return &out, nil
}

// readSignerInfo reads the one SignerInfo: who signed, with what, over
// which attributes.
func (sd *signedData) readSignerInfo(si cryptobyte.String) error {
	var version int64
	if !si.ReadASN1Integer(&version) {
		return errors.New("the signer info is malformed")
	}
	var sid cryptobyte.String
	var sidTag cbasn1.Tag
	if !si.ReadAnyASN1(&sid, &sidTag) {
		return errors.New("the signer info's signer identifier is malformed")
	}
	switch sidTag {
	case cbasn1.SEQUENCE: // issuerAndSerialNumber
		var issuer cryptobyte.String
		serial := new(big.Int)
		if !sid.ReadASN1Element(&issuer, cbasn1.SEQUENCE) || !sid.ReadASN1Integer(serial) || !sid.Empty() {
			return errors.New("the signer's issuer and serial number are malformed")
		}
		for _, c := range sd.certs {
			if string(c.RawIssuer) == string(issuer) && c.SerialNumber.Cmp(serial) == 0 {
				sd.signer = c
				break
			}
		}
	case cbasn1.Tag(0).ContextSpecific(): // subjectKeyIdentifier
		for _, c := range sd.certs {
			if len(c.SubjectKeyId) > 0 && string(c.SubjectKeyId) == string(sid) {
				sd.signer = c
				break
			}
		}
	default:
		return errors.New("the signer info's signer identifier is of an unknown kind")
	}
	if sd.signer == nil {
		return errors.New("the signature does not carry its signer's certificate")
	}
	var digestAlg cryptobyte.String
	var digestOID asn1.ObjectIdentifier
	if !si.ReadASN1(&digestAlg, cbasn1.SEQUENCE) || !digestAlg.ReadASN1ObjectIdentifier(&digestOID) {
		return errors.New("the signer's digest algorithm is malformed")
	}
	switch {
	case digestOID.Equal(oidSHA256):
		sd.digest = crypto.SHA256
	case digestOID.Equal(oidSHA384):
		sd.digest = crypto.SHA384
	case digestOID.Equal(oidSHA512):
		sd.digest = crypto.SHA512
	default:
		return fmt.Errorf("the signer's digest algorithm %v is not SHA-256, SHA-384 or SHA-512", digestOID)
	}
	var attrs cryptobyte.String
	if !si.PeekASN1Tag(cbasn1.Tag(0).Constructed().ContextSpecific()) {
		return errors.New("the signer signed no attributes: an mcpb signature signs the archive's digest as one")
	}
	if !si.ReadASN1Element(&attrs, cbasn1.Tag(0).Constructed().ContextSpecific()) {
		return errors.New("the signer's signed attributes are malformed")
	}
	// The signature is over the attributes' DER with the SET OF tag, not
	// the implicit [0] they are stored under.
	sd.signedAttrs = append([]byte{byte(cbasn1.SET)}, attrs[1:]...)
	if err := sd.readAttributes(attrs); err != nil {
		return err
	}
	var sigAlg cryptobyte.String
	var sigOID asn1.ObjectIdentifier
	if !si.ReadASN1(&sigAlg, cbasn1.SEQUENCE) || !sigAlg.ReadASN1ObjectIdentifier(&sigOID) {
		return errors.New("the signer's signature algorithm is malformed")
	}
	alg, err := signatureAlgorithm(sigOID, sd.digest, sd.signer)
	if err != nil {
		return err
	}
	sd.algorithm = alg
	var sig cryptobyte.String
	if !si.ReadASN1(&sig, cbasn1.OCTET_STRING) || !si.SkipOptionalASN1(cbasn1.Tag(1).Constructed().ContextSpecific()) || !si.Empty() {
		return errors.New("the signer's signature is malformed")
	}
	sd.signature = sig
	return nil
}

// readAttributes reads the signed attributes: contentType (data),
// messageDigest (required), signingTime (optional), each at most once
// and with one value.
func (sd *signedData) readAttributes(attrs cryptobyte.String) error {
	var set cryptobyte.String
	if !attrs.ReadASN1(&set, cbasn1.Tag(0).Constructed().ContextSpecific()) {
		return errors.New("the signer's signed attributes are malformed")
	}
	seen := map[string]bool{}
	var contentType bool
	for !set.Empty() {
		var attr, values, value cryptobyte.String
		var typ asn1.ObjectIdentifier
		if !set.ReadASN1(&attr, cbasn1.SEQUENCE) || !attr.ReadASN1ObjectIdentifier(&typ) || !attr.ReadASN1(&values, cbasn1.SET) || !attr.Empty() {
			return errors.New("a signed attribute is malformed")
		}
		if seen[typ.String()] {
			return fmt.Errorf("the signed attribute %v appears twice", typ)
		}
		seen[typ.String()] = true
		var tag cbasn1.Tag
		if !values.ReadAnyASN1Element(&value, &tag) || !values.Empty() {
			if typ.Equal(oidContentType) || typ.Equal(oidMessageDigest) || typ.Equal(oidSigningTime) {
				return fmt.Errorf("the signed attribute %v must have one value", typ)
			}
			continue
		}
		switch {
		case typ.Equal(oidContentType):
			var ct asn1.ObjectIdentifier
			if !value.ReadASN1ObjectIdentifier(&ct) || !ct.Equal(oidData) {
				return errors.New("the signed contentType attribute is not data")
			}
			contentType = true
		case typ.Equal(oidMessageDigest):
			var digest cryptobyte.String
			if !value.ReadASN1(&digest, cbasn1.OCTET_STRING) {
				return errors.New("the signed messageDigest attribute is not an octet string")
			}
			sd.messageDigest = digest
		case typ.Equal(oidSigningTime):
			var t time.Time
			var err error
			switch tag {
			case cbasn1.UTCTime:
				_, err = asn1.UnmarshalWithParams(value, &t, "utc")
			case cbasn1.GeneralizedTime:
				_, err = asn1.UnmarshalWithParams(value, &t, "generalized")
			default:
				err = errors.New("neither UTCTime nor GeneralizedTime")
			}
			if err != nil {
				return fmt.Errorf("the signed signingTime attribute: %w", err)
			}
			sd.signingTime = t
		}
	}
	if !contentType || sd.messageDigest == nil {
		return errors.New("the signer's signed attributes lack contentType or messageDigest")
	}
	return nil
}

// signatureAlgorithm is the x509 algorithm of a signer's signature
// algorithm and digest: RSA PKCS #1 v1.5 (as mcpb signs) or ECDSA, with
// the signature's digest the signer info's.
func signatureAlgorithm(oid asn1.ObjectIdentifier, digest crypto.Hash, cert *x509.Certificate) (x509.SignatureAlgorithm, error) {
	byDigest := func(a256, a384, a512 x509.SignatureAlgorithm) x509.SignatureAlgorithm {
		return map[crypto.Hash]x509.SignatureAlgorithm{crypto.SHA256: a256, crypto.SHA384: a384, crypto.SHA512: a512}[digest]
	}
	pairs := []struct {
		oid    asn1.ObjectIdentifier
		digest crypto.Hash // 0: any of the three
		alg    x509.SignatureAlgorithm
	}{
		{oidRSA, 0, byDigest(x509.SHA256WithRSA, x509.SHA384WithRSA, x509.SHA512WithRSA)},
		{oidSHA256WithRSA, crypto.SHA256, x509.SHA256WithRSA},
		{oidSHA384WithRSA, crypto.SHA384, x509.SHA384WithRSA},
		{oidSHA512WithRSA, crypto.SHA512, x509.SHA512WithRSA},
		{oidECPublicKey, 0, byDigest(x509.ECDSAWithSHA256, x509.ECDSAWithSHA384, x509.ECDSAWithSHA512)},
		{oidECDSASHA256, crypto.SHA256, x509.ECDSAWithSHA256},
		{oidECDSASHA384, crypto.SHA384, x509.ECDSAWithSHA384},
		{oidECDSASHA512, crypto.SHA512, x509.ECDSAWithSHA512},
	}
	for _, p := range pairs {
		if !p.oid.Equal(oid) {
			continue
		}
		if p.digest != 0 && p.digest != digest {
			return 0, fmt.Errorf("the signature algorithm %v does not use the signer's digest %v", oid, digest)
		}
		return p.alg, nil
	}
	return 0, fmt.Errorf("the signature algorithm %v is not RSA PKCS #1 v1.5 or ECDSA with SHA-2", oid)
}
