// Package bundlesig checks the signature `mcpb sign` (the MCP Bundle
// CLI, @anthropic-ai/mcpb) appends to a .mcpb bundle, against the roots
// the operator trusts.
//
// A signed bundle is the zip archive followed by one block:
//
//	archive  "MCPB_SIG_V1"  uint32 little-endian N  N bytes of DER  "MCPB_SIG_END"
//
// where the DER is a CMS (PKCS#7) SignedData, detached: it does not carry
// the archive, it signs its SHA-256 (a messageDigest signed attribute).
// The archive is exactly the bytes before the block, the zip as it was
// before signing, and it is what a bundle is unpacked from.
//
//	archive, sig, err := bundlesig.Split(b)     // sig nil: unsigned
//	signer, err := bundlesig.Verify(archive, sig, &bundlesig.VerifyOptions{Roots: pool})
//
// or, with the operator's settings (trust { bundles { … } }):
//
//	p, err := bundlesig.NewPolicy(cfg.Trust.Bundles.TrustedRoots, cfg.Trust.Bundles.RequireSignature)
//	v, err := p.Check(b, time.Now())           // v.Archive is what to unpack
//
// mcpb's own verifier (2.1.2) reports every signed bundle as unsigned and
// accepts a block with bytes after it; this package verifies the
// signature itself, and refuses what it cannot account for (docs/security.md,
// "Signed bundles").
package bundlesig

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// The markers mcpb writes around the signature (its SIGNATURE_HEADER and
// SIGNATURE_FOOTER).
const (
	header = "MCPB_SIG_V1"
	footer = "MCPB_SIG_END"
)

// MaxSignatureSize bounds the DER of a signature block: a signer's
// certificate and a few intermediates take a few kilobytes.
const MaxSignatureSize = 256 << 10

// The zip end of central directory record: its signature, its fixed size,
// and the largest comment that may follow it.
const (
	eocdSignature  = "PK\x05\x06"
	eocdSize       = 22
	maxZipComment  = 0xffff
	eocdCommentLen = 20 // offset of the comment length in the record
)

// ErrMalformed is wrapped by every error of Split: the bytes after the
// zip archive are not one whole signature block.
var ErrMalformed = errors.New("malformed bundle signature")

// Signature is a parsed signature block.
type Signature struct {
	// DER is the CMS SignedData the block carries.
	DER []byte

	signed *signedData
}

// Split separates a bundle file's bytes into the zip archive and the
// signature block mcpb appended; sig is nil when unsigned. A malformed
// block is an error: bytes after the archive that are not exactly one
// block (trailing bytes after its end marker, a block cut short, a length
// that does not match), or a block whose DER is not a detached CMS
// SignedData. The archive must end with its zip end of central directory
// record, comment included: that is how a truncated block (no end marker)
// is told from an unsigned bundle.
func Split(b []byte) (archive []byte, sig *Signature, err error) {
	if bytes.HasSuffix(b, []byte(footer)) {
		start, err := blockStart(b)
		if err != nil {
			return nil, nil, err
		}
		der := b[start+len(header)+4 : len(b)-len(footer)]
		sd, err := parseSignedData(der)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		archive = b[:start]
		if end, found := zipEnd(archive); end != len(archive) {
			return nil, nil, fmt.Errorf("%w: the signed part is not a whole zip archive (%s)", ErrMalformed, describeEnd(archive, end, found))
		}
		return archive, &Signature{DER: der, signed: sd}, nil
	}
	end, found := zipEnd(b)
	switch {
	case end == len(b):
		return b, nil, nil
	case !found:
		return nil, nil, fmt.Errorf("%w: not a zip archive: no end of central directory record in its last %d bytes", ErrMalformed, min(len(b), eocdSize+maxZipComment+MaxSignatureSize))
	case bytes.HasPrefix(b[end:], []byte(header)):
		if i := bytes.LastIndex(b[end:], []byte(footer)); i >= 0 {
			return nil, nil, fmt.Errorf("%w: %d bytes after the signature block's %s marker", ErrMalformed, len(b)-end-i-len(footer), footer)
		}
		return nil, nil, fmt.Errorf("%w: the signature block at offset %d is truncated: the file does not end with its %s marker", ErrMalformed, end, footer)
	default:
		return nil, nil, fmt.Errorf("%w: %d bytes after the zip archive's end are not a signature block", ErrMalformed, len(b)-end)
	}
}

// blockStart finds the signature block of b, which ends with the footer:
// the header whose length field reaches exactly the footer. The nearest
// one to the end is taken; a header inside the DER cannot be it, since
// the DER must then parse whole.
func blockStart(b []byte) (int, error) {
	limit := max(0, len(b)-len(footer)-MaxSignatureSize-4-len(header))
	for i := len(b) - len(footer) - 4 - len(header); i >= limit; i-- {
		if !bytes.HasPrefix(b[i:], []byte(header)) {
			continue
		}
		n := binary.LittleEndian.Uint32(b[i+len(header):])
		if uint64(i)+uint64(len(header))+4+uint64(n)+uint64(len(footer)) == uint64(len(b)) {
			if n > MaxSignatureSize {
				break
			}
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: the file ends with %s but no %s header with a matching length (at most %d bytes of signature) precedes it: the block is truncated or corrupt", ErrMalformed, footer, header, MaxSignatureSize)
}

// zipEnd returns where the zip archive in b ends: just after the comment
// of its end of central directory record. It prefers a record that ends
// exactly at the end of b (a comment may itself hold the record's
// signature); else it returns the end of the record nearest the end of b
// whose comment fits. found is false when b has no such record within
// reach of its end.
func zipEnd(b []byte) (end int, found bool) {
	limit := max(0, len(b)-eocdSize-maxZipComment-MaxSignatureSize)
	nearest := -1
	for i := len(b) - eocdSize; i >= limit; i-- {
		if !bytes.HasPrefix(b[i:], []byte(eocdSignature)) {
			continue
		}
		e := i + eocdSize + int(binary.LittleEndian.Uint16(b[i+eocdCommentLen:]))
		if e == len(b) {
			return e, true
		}
		if e < len(b) && nearest < 0 {
			nearest = e
		}
	}
	return nearest, nearest >= 0
}

// describeEnd says why a signed part is not a whole zip archive.
func describeEnd(archive []byte, end int, found bool) string {
	if !found {
		return "no end of central directory record"
	}
	return fmt.Sprintf("%d bytes after its end of central directory record", len(archive)-end)
}
