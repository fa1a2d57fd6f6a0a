package mcpb

import (
	"archive/zip"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// Limits bound what a bundle may unpack to. A zero field takes its
// default (DefaultLimits).
type Limits struct {
	// MaxFiles is the most entries (files and directories) an archive
	// may hold.
	MaxFiles int
	// MaxFile is the largest uncompressed size of one file.
	MaxFile int64
	// MaxTotal is the largest uncompressed size of all files together.
	MaxTotal int64
	// MaxRatio is the largest ratio of a file's uncompressed size to its
	// compressed size, for files over 1 MiB (a zip bomb's is in the
	// thousands; source, node_modules and binaries stay under 20).
	MaxRatio int64
}

// DefaultLimits are the limits of a field left zero: ample for a server
// with its node_modules or its Python libraries (server-filesystem's
// bundle is about 2,000 files and 10 MB).
var DefaultLimits = Limits{MaxFiles: 20000, MaxFile: 256 << 20, MaxTotal: 1 << 30, MaxRatio: 200}

// withDefaults fills l's zero fields.
func (l Limits) withDefaults() Limits {
	return Limits{MaxFiles: cmp.Or(l.MaxFiles, DefaultLimits.MaxFiles), MaxFile: cmp.Or(l.MaxFile, DefaultLimits.MaxFile),
		MaxTotal: cmp.Or(l.MaxTotal, DefaultLimits.MaxTotal), MaxRatio: cmp.Or(l.MaxRatio, DefaultLimits.MaxRatio)}
}

// The settings that raise the limits, for the messages: plughost's
// configuration, plugins { bundle_limits { … } }.
const (
	settingFiles = "bundle_limits.max_files"
	settingFile  = "bundle_limits.max_file_size"
	settingTotal = "bundle_limits.max_total_size"
)

// ratioFloor is the size under which the compression ratio is not
// looked at: a small file of one repeated byte is harmless.
const ratioFloor = 1 << 20

// entry is an archive member that passed the checks.
type entry struct {
	f    *zip.File
	name string // cleaned, slash-separated, relative
	dir  bool
}

// Read opens archive (a bundle's zip, its signature block split off),
// checks every entry against lim and parses its manifest, writing
// nothing: what `plughost install` shows before it asks to go ahead.
func Read(archive []byte, lim Limits) (*Manifest, error) {
	m, _, err := read(archive, lim)
	return m, err
}

// read is Read, also returning the checked entries.
func read(archive []byte, lim Limits) (*Manifest, []entry, error) {
	lim = lim.withDefaults()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return nil, nil, fmt.Errorf("not a bundle: not a zip archive: %w", err)
	}
	if len(zr.File) > lim.MaxFiles {
		return nil, nil, fmt.Errorf("bundle refused: %d entries, over the limit of %d (%s)", len(zr.File), lim.MaxFiles, settingFiles)
	}
	var entries []entry
	seen := map[string]bool{}
	var total int64
	var manifest *zip.File
	for _, f := range zr.File {
		e, err := checkEntry(f, lim)
		if err != nil {
			return nil, nil, fmt.Errorf("bundle refused: %q: %w", f.Name, err)
		}
		if key := strings.ToLower(e.name); seen[key] {
			return nil, nil, fmt.Errorf("bundle refused: %q: the archive holds it twice (names differing only in case count as one)", f.Name)
		} else {
			seen[key] = true
		}
		total += int64(f.UncompressedSize64)
		if total > lim.MaxTotal {
			return nil, nil, fmt.Errorf("bundle refused: its files are over the limit of %d bytes uncompressed (%s)", lim.MaxTotal, settingTotal)
		}
		if e.name == ManifestName && !e.dir {
			manifest = f
		}
		entries = append(entries, e)
	}
	if manifest == nil {
		return nil, nil, fmt.Errorf("not a bundle: no %s at the root of the archive", ManifestName)
	}
	b, err := readEntry(manifest, MaxManifest)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", ManifestName, err)
	}
	m, err := ParseManifest(b)
	if err != nil {
		return nil, nil, err
	}
	if !slices.ContainsFunc(entries, func(e entry) bool { return !e.dir && e.name == path.Clean(m.Server.EntryPoint) }) {
		return nil, nil, fmt.Errorf("%s: server.entry_point %q is not a file of the bundle", ManifestName, m.Server.EntryPoint)
	}
	return m, entries, nil
}

// checkEntry checks one member: its name, its type, its sizes.
func checkEntry(f *zip.File, lim Limits) (entry, error) {
	name := f.Name
	switch {
	case name == "" || strings.ContainsFunc(name, func(r rune) bool { return r == 0 || unicode.IsControl(r) }):
		return entry{}, errors.New("not a file name (empty, or control characters)")
	case strings.Contains(name, `\`):
		return entry{}, errors.New(`a backslash in a name: not a portable path`)
	case strings.HasPrefix(name, "/") || hasDrive(name):
		return entry{}, errors.New("an absolute path: it would be written outside the bundle's directory")
	}
	dir := strings.HasSuffix(name, "/")
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") || slices.Contains(strings.Split(name, "/"), "..") {
		return entry{}, errors.New(`a ".." path: it would be written outside the bundle's directory`)
	}
	if clean == "." {
		return entry{}, errors.New("names the bundle's directory itself")
	}
	mode := f.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		return entry{}, errors.New("a symbolic link: a bundle holds regular files and directories only (mcpb pack stores none)")
	case mode.IsDir() || dir:
		return entry{name: clean, dir: true, f: f}, nil
	case !mode.IsRegular():
		return entry{}, fmt.Errorf("not a regular file (%s)", mode.Type())
	case f.UncompressedSize64 > uint64(lim.MaxFile):
		return entry{}, fmt.Errorf("%d bytes uncompressed, over the limit of %d for one file (%s)", f.UncompressedSize64, lim.MaxFile, settingFile)
	case f.UncompressedSize64 > ratioFloor && f.UncompressedSize64/max(f.CompressedSize64, 1) > uint64(lim.MaxRatio):
		return entry{}, fmt.Errorf("compressed %d:1, over the limit of %d:1 (a zip bomb?)", f.UncompressedSize64/max(f.CompressedSize64, 1), lim.MaxRatio)
	}
	return entry{name: clean, f: f}, nil
}

// readEntry reads f whole, at most max bytes.
func readEntry(f *zip.File, max int64) ([]byte, error) {
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("over %d bytes", max)
	}
	return b, nil
}

// Unpack checks archive as Read does and writes its files into dir,
// which must not exist: into a temporary directory beside it first,
// renamed to dir once every file is written, so that dir is either whole
// or absent; on an error nothing is left. Files are written read-only,
// executable only when the archive marks them so; directories 0755.
// accept, when not nil, may refuse the manifest before anything is
// written. It returns the manifest and the tree's digest (TreeDigest).
func Unpack(archive []byte, dir string, lim Limits, accept func(*Manifest) error) (*Manifest, string, error) {
	lim = lim.withDefaults()
	m, entries, err := read(archive, lim)
	if err == nil && accept != nil {
		err = accept(m)
	}
	if err != nil {
		return nil, "", err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o711); err != nil { // traversed by the server, which runs as uid 65534 under a root host
		return nil, "", err
	}
	tmp, err := os.MkdirTemp(parent, ".unpack-*")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(tmp) // nothing left once renamed
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, "", err
	}
	var total int64
	for _, e := range entries {
		target := filepath.Join(tmp, filepath.FromSlash(e.name))
		if e.dir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return nil, "", fmt.Errorf("bundle refused: %q: %w", e.f.Name, err)
			}
			continue
		}
		n, err := writeEntry(e.f, target, lim.MaxFile, lim.MaxTotal-total)
		if err != nil {
			return nil, "", fmt.Errorf("bundle refused: %q: %w", e.f.Name, err)
		}
		total += n
	}
	if m.Server.Type == TypeBinary {
		fi, err := os.Stat(filepath.Join(tmp, filepath.FromSlash(path.Clean(m.Server.EntryPoint))))
		if err != nil || fi.Mode().Perm()&0o100 == 0 {
			return nil, "", fmt.Errorf("%s: server.entry_point %q of a binary server is not marked executable in the archive", ManifestName, m.Server.EntryPoint)
		}
	}
	tree, err := TreeDigest(tmp, lim)
	if err != nil {
		return nil, "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, "", err
	}
	return m, tree, nil
}

// writeEntry writes f at target, at most max bytes and at most left in
// all; it returns the bytes written.
func writeEntry(f *zip.File, target string, max, left int64) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return 0, err
	}
	r, err := f.Open()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	mode := os.FileMode(0o444)
	if f.Mode().Perm()&0o100 != 0 {
		mode = 0o555
	}
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	limit := min(max, left)
	n, err := io.Copy(out, io.LimitReader(r, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return n, err
	case n > limit:
		return n, fmt.Errorf("unpacks to more than its limit of %d bytes (its header says %d)", limit, f.UncompressedSize64)
	}
	return n, os.Chmod(target, mode)
}

// TreeDigest is the digest ("sha256:…") of the unpacked tree at dir:
// every file's path, executable bit and content, in path order. A
// symbolic link or special file in it, or a tree over lim, is an error.
func TreeDigest(dir string, lim Limits) (string, error) {
	lim = lim.withDefaults()
	h := sha256.New()
	count, total := 0, int64(0)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if count++; count > lim.MaxFiles+1 {
			return fmt.Errorf("over %d entries", lim.MaxFiles)
		}
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file (%s)", rel, d.Type())
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if total += fi.Size(); total > lim.MaxTotal {
			return fmt.Errorf("over %d bytes", lim.MaxTotal)
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fh := sha256.New()
		if _, err := io.Copy(fh, f); err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%t\x00%x\n", filepath.ToSlash(rel), fi.Mode().Perm()&0o100 != 0, fh.Sum(nil))
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("unpacked bundle %s: %w", dir, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
