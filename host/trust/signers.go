package trust

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Namespace is the SSHSIG namespace of a plugin signature: what
// `ssh-keygen -Y sign -n plughost-plugin` puts in the signature, and the
// only one Verify accepts, so that a signature made for git ("git") or
// for a file ("file") cannot be replayed as a plugin's.
const Namespace = "plughost-plugin"

// SigSuffix ends the name of a plugin's signature file: echo.sig beside
// echo, notes.mcp.json.sig beside notes.mcp.json (what ssh-keygen -Y sign
// writes).
const SigSuffix = ".sig"

// SignedFile is the name of the file that the signature file of that name
// signs (echo for echo.sig); false when name is not a signature file's.
func SignedFile(name string) (string, bool) {
	file, ok := strings.CutSuffix(name, SigSuffix)
	if !ok || file == "" {
		return "", false
	}
	return file, true
}

// MaxSignatureSize is the largest signature file read; an SSH signature
// is well under 2 KiB even with an RSA-4096 key.
const MaxSignatureSize = 16 << 10

// The reasons a signature is refused, for callers to match with
// errors.Is; the error's text says more.
var (
	// ErrNoSignature: the plugin has no NAME.sig beside it.
	ErrNoSignature = errors.New("no signature")
	// ErrUntrustedKey: the signature's key is not in allowed_signers (or
	// not for this namespace, or not at this time).
	ErrUntrustedKey = errors.New("signed by a key not trusted")
	// ErrWrongNamespace: the signature was made for another namespace.
	ErrWrongNamespace = errors.New("signature for another namespace")
	// ErrBadSignature: the signature does not parse or does not match the
	// file (the file changed after it was signed).
	ErrBadSignature = errors.New("bad signature")
)

// Signers are the keys the operator trusts to sign plugins, read from a
// file in the format of OpenSSH's allowed_signers (ssh-keygen(1), "ALLOWED
// SIGNERS"): one key a line,
//
//	PRINCIPALS [OPTIONS] KEYTYPE BASE64 [COMMENT]
//
//	alice@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI… alice's laptop
//	ci@example.com,release@example.com namespaces="plughost-plugin" ssh-ed25519 AAAA…
//	old@example.com valid-before="20270101" ssh-rsa AAAA…
//
// PRINCIPALS (comma-separated, optionally in double quotes) name the
// signer; plughost shows the first in its logs and `plughost plugins`
// ("signed by alice@example.com"), and any trusted key may sign any
// plugin. OPTIONS are those of OpenSSH: namespaces="a,b" (the key signs
// plugins only when the list holds plughost-plugin; absent means any
// namespace), valid-after="YYYYMMDD[HHMM[SS]]" and valid-before=… (UTC,
// or local time without the Z suffix as OpenSSH reads them; plughost
// reads them as UTC, with or without Z). cert-authority is refused:
// plughost verifies plain keys, not SSH certificates. Empty lines and
// lines starting with # are skipped; any other line that does not parse
// is an error naming its line number, so that a typo never silently drops
// a key.
type Signers struct {
	keys []signer
}

type signer struct {
	principals  []string
	key         ssh.PublicKey
	namespaces  []string  // nil: any
	validAfter  time.Time // zero: no bound
	validBefore time.Time
	line        int
}

// ReadSigners reads an allowed_signers file. A missing file is an error:
// an operator who names one means to trust the keys in it.
func ReadSigners(path string) (*Signers, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("allowed signers: %w", err)
	}
	defer f.Close()
	s, err := ParseSigners(io.LimitReader(f, MaxFileSize))
	if err != nil {
		return nil, fmt.Errorf("allowed signers %s: %w", path, err)
	}
	return s, nil
}

// ParseSigners parses the content of an allowed_signers file.
func ParseSigners(r io.Reader) (*Signers, error) {
	var s Signers
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, err := parseSignerLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		k.line = n
		s.keys = append(s.keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Len is how many keys are trusted.
func (s *Signers) Len() int {
	if s == nil {
		return 0
	}
	return len(s.keys)
}

// parseSignerLine parses one non-empty line of allowed_signers.
func parseSignerLine(line string) (signer, error) {
	var k signer
	var principals string
	if line[0] == '"' {
		end := strings.IndexByte(line[1:], '"')
		if end < 0 {
			return k, errors.New("principals: unmatched quote")
		}
		principals, line = line[1:end+1], line[end+2:]
	} else {
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			return k, errors.New("no key after the principals")
		}
		principals, line = line[:i], line[i:]
	}
	for p := range strings.SplitSeq(principals, ",") {
		if p = strings.TrimSpace(p); p != "" {
			k.principals = append(k.principals, p)
		}
	}
	if len(k.principals) == 0 {
		return k, errors.New("no principals")
	}
	// The rest is the format of an authorized_keys line: [options] key.
	key, _, options, rest, err := ssh.ParseAuthorizedKey([]byte(strings.TrimSpace(line)))
	if err != nil {
		return k, fmt.Errorf("key: %w", err)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return k, errors.New("more than one key on the line")
	}
	k.key = key
	for _, o := range options {
		name, value, hasValue := strings.Cut(o, "=")
		value = strings.Trim(value, `"`)
		switch name = strings.ToLower(name); {
		case name == "namespaces" && hasValue:
			for ns := range strings.SplitSeq(value, ",") {
				if ns = strings.TrimSpace(ns); ns != "" {
					k.namespaces = append(k.namespaces, ns)
				}
			}
		case (name == "valid-after" || name == "valid-before") && hasValue:
			t, err := parseSignerTime(value)
			if err != nil {
				return k, fmt.Errorf("%s: %w", name, err)
			}
			if name == "valid-after" {
				k.validAfter = t
			} else {
				k.validBefore = t
			}
		case name == "cert-authority":
			return k, errors.New("cert-authority: plughost trusts plain keys, not SSH certificates")
		default:
			return k, fmt.Errorf("unknown option %q (allowed: namespaces, valid-after, valid-before)", o)
		}
	}
	return k, nil
}

// parseSignerTime reads OpenSSH's YYYYMMDD[HHMM[SS]][Z] as UTC.
func parseSignerTime(v string) (time.Time, error) {
	v = strings.TrimSuffix(v, "Z")
	for _, layout := range []string{"20060102", "200601021504", "20060102150405"} {
		if len(v) == len(layout) {
			if t, err := time.Parse(layout, v); err == nil {
				return t, nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("%q is not YYYYMMDD[HHMM[SS]]", v)
}

// Verify checks the signature at sigPath of the file at path, reading the
// file as a stream, at the time now. It returns the first principal of
// the trusted key that made it, and the digest ("sha256:…") of the bytes
// it verified: a caller that runs the file from a descriptor it opened
// and hashed before compares the two, so that a file swapped between its
// hashing and this read is never taken for the signed one. The errors
// wrap ErrNoSignature, ErrWrongNamespace, ErrUntrustedKey or
// ErrBadSignature.
func (s *Signers) Verify(path, sigPath string, now time.Time) (principal, digest string, err error) {
	armored, err := readSignature(sigPath)
	if err != nil {
		return "", "", err
	}
	sig, err := sshsig.Unarmor(armored)
	if err != nil {
		return "", "", fmt.Errorf("%w: %s: %v", ErrBadSignature, sigPath, err)
	}
	if sig.Namespace != Namespace {
		return "", "", fmt.Errorf("%w: made for namespace %q, not %q (sign with ssh-keygen -Y sign -n %s)",
			ErrWrongNamespace, sig.Namespace, Namespace, Namespace)
	}
	k, err := s.trusted(sig.PublicKey, now)
	if err != nil {
		return "", "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	h := sha256.New()
	if err := sshsig.Verify(io.TeeReader(bufio.NewReaderSize(f, 256<<10), h), sig, k.key, sig.HashAlgorithm, Namespace); err != nil {
		return "", "", fmt.Errorf("%w: the file does not match its signature by %s (changed after signing?): %v", ErrBadSignature, k.principals[0], err)
	}
	return k.principals[0], SHA256Digest(hex.EncodeToString(h.Sum(nil))), nil
}

// readSignature reads an armored signature file, bounded.
func readSignature(sigPath string) ([]byte, error) {
	f, err := os.Open(sigPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is missing", ErrNoSignature, sigPath)
	}
	if err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSignatureSize+1))
	if err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	if len(b) > MaxSignatureSize {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrBadSignature, sigPath, MaxSignatureSize)
	}
	return b, nil
}

// trusted returns the entry of key that may sign plugins at now.
func (s *Signers) trusted(key ssh.PublicKey, now time.Time) (signer, error) {
	fp := ssh.FingerprintSHA256(key)
	var why string
	for _, k := range s.keysOrNone() {
		if !bytes.Equal(k.key.Marshal(), key.Marshal()) {
			continue
		}
		switch {
		case k.namespaces != nil && !slices.Contains(k.namespaces, Namespace):
			why = fmt.Sprintf("line %d allows it only namespaces %s", k.line, strings.Join(k.namespaces, ","))
		case !k.validAfter.IsZero() && now.Before(k.validAfter):
			why = fmt.Sprintf("line %d makes it valid only after %s", k.line, k.validAfter.Format(time.DateTime))
		case !k.validBefore.IsZero() && !now.Before(k.validBefore):
			why = fmt.Sprintf("line %d made it valid only before %s", k.line, k.validBefore.Format(time.DateTime))
		default:
			return k, nil
		}
	}
	if why != "" {
		return signer{}, fmt.Errorf("%w: %s (%s): %s", ErrUntrustedKey, fp, key.Type(), why)
	}
	return signer{}, fmt.Errorf("%w: %s (%s) is not in allowed_signers", ErrUntrustedKey, fp, key.Type())
}

func (s *Signers) keysOrNone() []signer {
	if s == nil {
		return nil
	}
	return s.keys
}
