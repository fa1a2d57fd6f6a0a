package mcpb

import (
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

	"github.com/gofrs/flock"

	"github.com/plughost/plughost/internal/atomicfile"
)

// MaxBundle is the largest bundle file read (DefaultLimits.MaxTotal
// bounds what it unpacks to).
const MaxBundle = 512 << 20

// ReadFile reads the bundle file at path, at most MaxBundle bytes, and
// returns its bytes and their SHA-256 (hex).
func ReadFile(path string) ([]byte, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxBundle+1))
	if err != nil {
		return nil, "", err
	}
	if len(b) > MaxBundle {
		return nil, "", fmt.Errorf("%s: over %d bytes: refused", path, MaxBundle)
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:]), nil
}

// Installed records one unpacked bundle: Root/SHA256/ holds its files,
// Root/SHA256.json this record, written once the files are whole.
type Installed struct {
	// SHA256 is the bundle file's (signature block included), hex.
	SHA256 string `json:"sha256"`
	// Tree is the unpacked tree's digest (TreeDigest), checked again
	// before every start: a file changed since is refused.
	Tree string `json:"tree"`
	// Name and Version are the manifest's.
	Name    string `json:"name"`
	Version string `json:"version"`
	// Signer is the subject of the certificate that signed it; "" for
	// an unsigned bundle.
	Signer string `json:"signer,omitempty"`
	// Dir is where it is unpacked (not stored: derived).
	Dir string `json:"-"`
}

// Ensure makes the bundle whose file's SHA-256 is sha (hex) and whose zip
// archive is archive unpacked under root (STATE/bundles/NAME), and
// returns its record and manifest. accept, when not nil, may refuse the
// manifest before anything is written (compatibility, server type); it
// is asked of an unpacked tree's manifest too. An unpacked tree already there is
// checked against its record (TreeDigest) instead of unpacked again; one
// that changed is refused, naming the directory to remove. A directory
// without its record (a crash between the two) is unpacked again.
func Ensure(root, sha string, archive []byte, signer string, lim Limits, accept func(*Manifest) error) (*Installed, *Manifest, error) {
	if len(sha) != 64 || strings.Trim(sha, "0123456789abcdef") != "" {
		return nil, nil, fmt.Errorf("%q is not a SHA-256", sha)
	}
	unlock, err := lockRoot(root)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	dir := filepath.Join(root, sha)
	record := dir + ".json"
	if in, err := readRecord(record); err == nil {
		in.Dir = dir
		tree, err := TreeDigest(dir, lim)
		if err != nil {
			return nil, nil, err
		}
		if tree != in.Tree {
			return nil, nil, fmt.Errorf("the unpacked bundle %s changed since it was unpacked (its files hash to %s, recorded %s): remove it and %s to unpack it again", dir, tree, in.Tree, record)
		}
		b, err := os.ReadFile(filepath.Join(dir, ManifestName))
		if err != nil {
			return nil, nil, err
		}
		m, err := ParseManifest(b)
		if err == nil && accept != nil {
			err = accept(m)
		}
		if err != nil {
			return nil, nil, err
		}
		return in, m, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, nil, err
	}
	m, tree, err := Unpack(archive, dir, lim, accept)
	if err != nil {
		return nil, nil, err
	}
	in := &Installed{SHA256: sha, Tree: tree, Name: m.Name, Version: m.Version, Signer: signer, Dir: dir}
	b, err := json.MarshalIndent(in, "", "  ")
	if err == nil {
		err = atomicfile.Write(record, append(b, '\n'))
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return in, m, nil
}

// readRecord reads an Installed record.
func readRecord(path string) (*Installed, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var in Installed
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &in, nil
}

// Prune removes the bundles under root but those of the SHA-256s in
// keep: their unpacked trees, records and the copies install made
// (SHA256.mcpb); what an install or upgrade leaves once the new one
// runs.
func Prune(root string, keep ...string) error {
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock, err := lockRoot(root)
	if err != nil {
		return err
	}
	defer unlock()
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		sha := strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".json"), ".mcpb")
		if len(sha) != 64 || slices.Contains(keep, sha) {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(root, e.Name())))
	}
	return errors.Join(errs...)
}

// lockRoot takes the lock of root (root/.lock, flock on unix, LockFileEx
// on Windows, through gofrs/flock), waiting for another process that holds
// it: unpacking is bounded by Limits.
func lockRoot(root string) (unlock func(), err error) {
	if err := os.MkdirAll(root, 0o711); err != nil { // traversed by the server, which runs as uid 65534 under a root host
		return nil, err
	}
	lock := flock.New(filepath.Join(root, ".lock"))
	if err := lock.Lock(); err != nil {
		return nil, fmt.Errorf("bundle lock %s: %w", lock.Path(), err)
	}
	return func() { _ = lock.Close() }, nil
}
