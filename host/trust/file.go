package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/plughost/plughost/internal/atomicfile"
)

// FileFormat is the version of the trust file's format that this host
// reads and writes. A file of another format is refused as a whole (every
// pinned plugin is then quarantined): a newer format may pin more than
// this host knows how to check, and ignoring a pin must never be how a
// plugin gets through. Format 2 added an entry's definitions; a file of
// format 1 is read as one whose entries pin no definitions, and is
// written back as format 2.
const FileFormat = 2

// File is the trust file: the operator's approvals, by provider name. It
// is JSON so that a configuration manager (Ansible, Puppet, a Kubernetes
// ConfigMap) can write it as well as `plughost approve` does:
//
//	{
//	  "format": 2,
//	  "plugins": {
//	    "echo": {"digest": "sha256:9f86d0…", "approved_at": "2026-11-26T09:30:00Z", "approved_by": "ops@build1", "file": "echo",
//	      "definitions": {"tool/echo": {"pin": "sha256/v1:5e1c…", "definition": {"name": "echo", "description": "…"}}}}
//	  }
//	}
//
// The definitions member (format 2) pins what the plugin offers as it was
// approved (see Pinned), so that a plugin that changes a tool's
// description is held back the way a changed binary is. Unknown members
// of an entry are kept as they are when plughost rewrites the file
// (Entry.Extra).
type File struct {
	Format  int              `json:"format"`
	Plugins map[string]Entry `json:"plugins"`
}

// Entry is one approved plugin.
type Entry struct {
	// Digest is what was approved: "sha256:" and the hex SHA-256 of the
	// plugin's file (a binary, or a declared server's NAME.mcp.json).
	Digest string `json:"digest"`
	// ApprovedAt is when, in UTC.
	ApprovedAt time.Time `json:"approved_at"`
	// ApprovedBy is who: "user@host" for plughost approve; a
	// configuration manager writes what it likes. For people only.
	ApprovedBy string `json:"approved_by,omitempty"`
	// File is the plugin file's name when it was approved, for people
	// only: the entry is the provider name's, whatever its file.
	File string `json:"file,omitempty"`
	// Parts are what Digest covers when it covers more than one file (a
	// declared server: "declaration", and "program" or "package"), each
	// as approved, so that a change names the part that changed
	// (DiffParts). For people: Digest alone decides.
	Parts map[string]string `json:"parts,omitempty"`
	// Definitions pins the plugin's tools, prompts, resources and
	// resource templates as approved, by Definition.Key; nil when the
	// approval pins none (an approval of format 1, or of a plugin whose
	// definitions could not be listed).
	Definitions map[string]Pinned `json:"-"`
	// Extra holds the members this host does not know, written back as
	// they were read.
	Extra map[string]json.RawMessage `json:"-"`
}

// definitionsKey is Entry.Definitions's member, read by ParseFile from
// the entry's other members according to the file's format.
const definitionsKey = "definitions"

// entryKeys are the members of Entry this host knows.
var entryKeys = []string{"digest", "approved_at", "approved_by", "file", "parts"}

// MarshalJSON writes the entry's known members and its Extra ones.
func (e Entry) MarshalJSON() ([]byte, error) {
	type known Entry
	b, err := json.Marshal(known(e))
	if err != nil || (len(e.Extra) == 0 && e.Definitions == nil) {
		return b, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range e.Extra {
		if !slices.Contains(entryKeys, k) && k != definitionsKey {
			m[k] = v
		}
	}
	if e.Definitions != nil {
		if m[definitionsKey], err = json.Marshal(e.Definitions); err != nil {
			return nil, err
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the known members and keeps the others in Extra
// (definitions too, which ParseFile reads by the file's format).
func (e *Entry) UnmarshalJSON(b []byte) error {
	type known Entry
	var k known
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for _, key := range entryKeys {
		delete(m, key)
	}
	*e = Entry(k)
	e.Extra = nil
	if len(m) > 0 {
		e.Extra = m
	}
	return nil
}

// MaxFileSize is the largest trust file read: far more than any
// directory's approvals need.
const MaxFileSize = 4 << 20

// ReadFile reads the trust file at path. A missing file is an empty one
// (nothing approved). A file that does not parse, is of another format,
// or approves a plugin with a malformed digest is an error naming the
// path.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{Format: FileFormat, Plugins: map[string]Entry{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trust file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("trust file: %w", err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("trust file %s: over %d bytes", path, MaxFileSize)
	}
	tf, err := ParseFile(b)
	if err != nil {
		return nil, fmt.Errorf("trust file %s: %w", path, err)
	}
	return tf, nil
}

// ParseFile parses a trust file's content.
func ParseFile(b []byte) (*File, error) {
	var tf File
	if len(bytes.TrimSpace(b)) == 0 { // a configuration manager's empty placeholder
		return &File{Format: FileFormat, Plugins: map[string]Entry{}}, nil
	}
	if err := json.Unmarshal(b, &tf); err != nil {
		return nil, fmt.Errorf("not a trust file: %w", err)
	}
	if tf.Format != 1 && tf.Format != FileFormat {
		return nil, fmt.Errorf("format %d, but this plughost reads formats 1 and %d", tf.Format, FileFormat)
	}
	if tf.Plugins == nil {
		tf.Plugins = map[string]Entry{}
	}
	for name, e := range tf.Plugins {
		if _, err := ParseDigest(e.Digest); err != nil {
			return nil, fmt.Errorf("plugin %q: %w", name, err)
		}
		if err := e.readDefinitions(tf.Format); err != nil {
			return nil, fmt.Errorf("plugin %q: %w", name, err)
		}
		tf.Plugins[name] = e
	}
	return &tf, nil
}

// readDefinitions moves the definitions member out of Extra into
// Definitions. Format 1 had no such member: one there is no pin of this
// host's, and is dropped rather than written back into a format 2 file.
func (e *Entry) readDefinitions(format int) error {
	raw, ok := e.Extra[definitionsKey]
	if !ok {
		return nil
	}
	delete(e.Extra, definitionsKey)
	if len(e.Extra) == 0 {
		e.Extra = nil
	}
	if format == 1 {
		return nil
	}
	if err := json.Unmarshal(raw, &e.Definitions); err != nil {
		return fmt.Errorf("definitions: %w", err)
	}
	for key, p := range e.Definitions {
		if p.Definition != nil { // as listed, not as indented in the file
			var b bytes.Buffer
			if err := json.Compact(&b, p.Definition); err != nil {
				return fmt.Errorf("definition %q: %w", key, err)
			}
			p.Definition = b.Bytes()
			e.Definitions[key] = p
		}
		if !strings.HasPrefix(p.Pin, PinVersion+":") {
			// A pin of a later formula is not this host's to check: the
			// definition is then held as never approved, not let through.
			continue
		}
		h := strings.TrimPrefix(p.Pin, PinVersion+":")
		if _, err := hex.DecodeString(h); err != nil || len(h) != 2*sha256.Size || strings.ToLower(h) != h {
			return fmt.Errorf("definition %q: pin %q is not %s: and 64 lower-case hex digits", key, p.Pin, PinVersion)
		}
	}
	return nil
}

// ParseDigest checks a digest written "sha256:" followed by 64 lower-case
// hex digits and returns its hex part.
func ParseDigest(d string) (string, error) {
	h, ok := strings.CutPrefix(d, "sha256:")
	if _, err := hex.DecodeString(h); !ok || err != nil || len(h) != 2*sha256.Size || strings.ToLower(h) != h {
		return "", fmt.Errorf("digest %q is not sha256: and 64 lower-case hex digits", d)
	}
	return h, nil
}

// Digest returns the digest of the file at path: "sha256:" and its
// SHA-256 in hex, read as a stream.
func Digest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return SHA256Digest(hex.EncodeToString(h.Sum(nil))), nil
}

// SHA256Digest is the digest of a file whose SHA-256 in hex is sum:
// "sha256:" and sum, as the trust file and Verdict write it.
func SHA256Digest(sum string) string {
	return "sha256:" + sum
}

// Update changes the trust file at path with change, which gets the file
// as it is (empty when missing) and may modify it: under an exclusive
// lock (on .NAME.lock beside it: flock on unix, LockFileEx on Windows) so that two plughost approve never
// lose each other's change, and written atomically (a temporary file in
// the same directory, mode 0600, renamed over it) so that a host watching
// the file never reads half of it. The directory is created (0700) when
// missing. A configuration manager that writes the file itself should
// rename over it too.
func Update(path string, change func(*File) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("trust file: %w", err)
	}
	lock := flock.New(filepath.Join(dir, "."+filepath.Base(path)+".lock"))
	if err := lock.Lock(); err != nil {
		return fmt.Errorf("trust file: lock: %w", err)
	}
	defer lock.Close()
	tf, err := ReadFile(path)
	if err != nil {
		return err
	}
	if err := change(tf); err != nil {
		return err
	}
	tf.Format = FileFormat
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return fmt.Errorf("trust file: %w", err)
	}
	if err := atomicfile.Write(path, append(b, '\n')); err != nil {
		return fmt.Errorf("trust file: %w", err)
	}
	return nil
}
