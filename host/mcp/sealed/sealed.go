// Package sealed seals small payloads into opaque strings that only holders
// of the key can open, until an expiry written inside them.
//
// It exists for the requestState of MCP 2026-07-28. That revision is
// stateless: a server that needs the client's input (sampling, elicitation,
// roots) answers an InputRequiredResult carrying an opaque requestState, and
// the client retries the request with its answers and that state. The retry
// may reach another replica behind a load balancer, so the state cannot stay
// in the memory of the process that made it: it travels through the client.
// The client must not read it (it holds a plugin's private state), must not
// forge or alter it, and must not keep using it forever. A sealed string is
// therefore:
//
//   - confidential and authenticated: AES-256-GCM, a random 96-bit nonce per
//     seal, with a key derived by HKDF-SHA256 from a secret every replica
//     shares (New), so any replica opens what another sealed;
//   - bound to a purpose: the purpose is associated data, so a state sealed
//     for one use is refused for another;
//   - dated: the expiry is encrypted and authenticated with the payload, and
//     Open refuses a state past it;
//   - bounded: at most MaxSealed bytes, checked before anything is decoded;
//   - versioned: "v1." then URL-safe base64 without padding, so it is a
//     plain JSON string and a later format can be told apart.
//
// Open answers ErrTampered for anything it cannot authenticate (another key,
// another purpose, one altered byte, a truncation, or text that is not a
// sealed string at all), and ErrExpired only for an authentic state past its
// expiry: the distinction tells nobody without the key anything.
//
// A sealed string can be opened any number of times until it expires:
// sealing proves who made a state and that it is unchanged, not that it is
// used once. Keep TTLs as short as the human on the other side allows.
//
// The package compresses nothing: a caller that wants to fit more
// compresses before sealing, knowing what its bytes are (compressing bytes
// an attacker chose next to secrets can leak the secrets through the
// length).
package sealed

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
)

// KeySize is the length of a key in bytes (32): an AES-256 key, and the
// shortest secret New accepts.
const KeySize = 32

// MaxSealed is the longest sealed string Open accepts and Seal produces:
// 128 KiB.
//
// A sealed state travels back inside the client's JSON request body, whose
// default limit in plughost is 4 MiB (mcp.DefaultMaxMessageSize), next to
// the client's answers, which should get most of that room. What it seals
// is small: plughost's plugin SDK keeps a plugin's own state at most 64 KiB
// once deflated, so even base64-encoded inside a JSON payload (87,382
// bytes) it fits, with about 10 KiB to spare for the host's own
// bookkeeping. And since the length is checked before decoding, a client
// cannot make Open do work in proportion to a huge string.
//
// The largest payload Seal accepts is therefore 98,265 bytes: 128 KiB of
// text, less the "v1." prefix, decode to 98,301 bytes, of which 36 are the
// nonce, the expiry and the authentication tag.
const MaxSealed = 128 << 10

var (
	// ErrTampered is Open's answer for a string it cannot authenticate: not
	// sealed with this key or for this purpose, altered, truncated, or not
	// a sealed string at all.
	ErrTampered = errors.New("sealed: not a state sealed with this key for this purpose (altered, truncated or foreign)")
	// ErrExpired is Open's answer for an authentic state past its expiry.
	ErrExpired = errors.New("sealed: the state has expired")
	// ErrTooLarge is Open's answer for a string longer than MaxSealed, and
	// Seal's for a payload whose sealed string would be.
	ErrTooLarge = errors.New("sealed: the state is larger than MaxSealed")
)

const (
	// version starts every sealed string; it is also part of the
	// associated data, so a later format cannot be confused with this one.
	version = "v1."
	// info is HKDF's context: a key derived for this use is useless for
	// any other use of the same secret.
	info = "plughost requestState v1"
	// expirySize is the length of the expiry that precedes the payload in
	// the plaintext: Unix milliseconds, big-endian.
	expirySize = 8
)

// enc is the text encoding. Strict refuses non-zero trailing bits, so that
// a sealed string has exactly one spelling: every altered character is
// refused, not just most.
var enc = base64.RawURLEncoding.Strict()

// A Sealer seals and opens with one key. It is safe for concurrent use.
//
// The layout of a sealed string is
//
//	"v1." base64url( nonce[12] | AES-256-GCM( expiry[8] | payload ) | tag[16] )
//
// with "v1." and the purpose as associated data. One key may seal 2^32
// states before random nonces risk repeating (NIST SP 800-38D); rotate the
// secret well before that.
type Sealer struct {
	aead cipher.AEAD
	now  func() time.Time // the clock; tests move it
}

// New returns a Sealer for secret, which must be at least KeySize bytes. A
// longer secret (a passphrase read from a file, say) is fine: the AES-256
// key is derived from it with HKDF-SHA256 (info "plughost requestState v1"),
// so replicas given the same secret derive the same key and open each
// other's states. A shorter secret is an error naming the minimum; the error
// never contains the secret.
func New(secret []byte) (*Sealer, error) {
	if len(secret) < KeySize {
		return nil, fmt.Errorf("sealed: the secret is %d bytes; it must be at least %d", len(secret), KeySize)
	}
	key, err := hkdf.Key(sha256.New, secret, nil, info, KeySize)
	if err != nil {
		return nil, fmt.Errorf("sealed: deriving the key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("sealed: %w", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("sealed: %w", err)
	}
	return &Sealer{aead: aead, now: time.Now}, nil
}

// NewRandom returns a Sealer with a fresh random key. Its states can be
// opened by this Sealer only: it suits one process serving alone, not
// replicas behind a load balancer, which need New with a shared secret.
func NewRandom() *Sealer {
	secret := make([]byte, KeySize)
	rand.Read(secret) // never fails: it crashes the program instead
	s, err := New(secret)
	if err != nil {
		panic(err) // unreachable: the secret has the right size
	}
	return s
}

// Seal seals payload for purpose, valid until now+ttl, and returns the
// sealed string: "v1." then URL-safe base64 without padding, safe in JSON
// and URLs as is.
//
// The purpose (a method name, say) is bound as associated data: Open with
// another purpose answers ErrTampered. The expiry is sealed with the
// payload, so it is authenticated and hidden like it. A payload whose sealed
// string would exceed MaxSealed (a payload over 98,265 bytes) is refused
// with ErrTooLarge, before any work; a ttl that is not positive is an error.
func (s *Sealer) Seal(purpose string, payload []byte, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", fmt.Errorf("sealed: the ttl must be positive, not %v", ttl)
	}
	raw := expirySize + len(payload) + s.aead.Overhead()
	if len(version)+enc.EncodedLen(raw) > MaxSealed {
		return "", ErrTooLarge
	}
	plain := make([]byte, expirySize, expirySize+len(payload))
	binary.BigEndian.PutUint64(plain, uint64(s.now().Add(ttl).UnixMilli()))
	plain = append(plain, payload...)
	// The AEAD draws the nonce and puts it first.
	sealed := s.aead.Seal(nil, nil, plain, associated(purpose))
	out := make([]byte, len(version)+enc.EncodedLen(len(sealed)))
	copy(out, version)
	enc.Encode(out[len(version):], sealed)
	return string(out), nil
}

// Open checks and opens a string made by Seal with the same key and
// purpose, and returns its payload. It answers
//
//   - ErrTooLarge for a string longer than MaxSealed, checked first,
//     before anything is decoded;
//   - ErrTampered for anything it cannot authenticate: another key or
//     purpose, any altered or missing byte, another version, text that is
//     not base64;
//   - ErrExpired for an authentic state past its expiry. The expiry is read
//     only once the state is authenticated, so the distinction from
//     ErrTampered tells an attacker nothing.
func (s *Sealer) Open(purpose, sealed string) ([]byte, error) {
	if len(sealed) > MaxSealed {
		return nil, ErrTooLarge
	}
	text, ok := strings.CutPrefix(sealed, version)
	// The decoder skips CR and LF: refuse them, so that no second spelling
	// of a state opens.
	if !ok || strings.ContainsAny(text, "\r\n") {
		return nil, ErrTampered
	}
	raw, err := enc.DecodeString(text)
	if err != nil || len(raw) < s.aead.Overhead()+expirySize {
		return nil, ErrTampered
	}
	plain, err := s.aead.Open(raw[:0], nil, raw, associated(purpose))
	if err != nil {
		return nil, ErrTampered
	}
	expiry := int64(binary.BigEndian.Uint64(plain))
	if s.now().UnixMilli() >= expiry {
		return nil, ErrExpired
	}
	return plain[expirySize:], nil
}

// associated is the associated data of a seal: the version, then the
// purpose (the version's length is fixed, so the two cannot run together).
func associated(purpose string) []byte {
	return append([]byte(version), purpose...)
}
