package release

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"time"
)

// entry is one file of an archive: its name inside the archive, the file
// it is read from, and whether it is a program (mode 0755) or not (0644).
type entry struct {
	name, src  string
	executable bool
}

// mode is the only file mode an archive records: the build machine's umask
// and the source checkout's modes must not reach a release.
func (e entry) mode() int64 {
	if e.executable {
		return 0o755
	}
	return 0o644
}

// writeTarGz writes entries, in the order given, as a gzip-compressed tar
// to w. Everything a tar or gzip header could take from the build machine
// is fixed, so equal inputs give equal bytes: every entry's mtime is
// mtime, its owner is 0:0 with no user or group name, its mode is
// entry.mode, and the gzip header carries no file name and no mtime
// (compress/gzip writes OS "unknown", 255, always). Directories get no
// entries of their own: tar creates them on extraction.
func writeTarGz(w io.Writer, entries []entry, mtime time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		err := copyEntry(e, func(size int64) (io.Writer, error) {
			hdr := &tar.Header{
				Typeflag: tar.TypeReg, Name: e.name, Size: size, Mode: e.mode(),
				ModTime: mtime.UTC().Truncate(time.Second), Format: tar.FormatUSTAR,
			}
			return tw, tw.WriteHeader(hdr)
		})
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// writeZip writes entries, in the order given, as a zip to w, deflated,
// each with mtime as its modification time and entry.mode as its Unix mode
// (Windows ignores it; unzip on Unix restores the executable bit).
func writeZip(w io.Writer, entries []entry, mtime time.Time) error {
	zw := zip.NewWriter(w)
	for _, e := range entries {
		err := copyEntry(e, func(int64) (io.Writer, error) {
			hdr := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: mtime.UTC().Truncate(time.Second)}
			hdr.SetMode(os.FileMode(e.mode()))
			return zw.CreateHeader(hdr)
		})
		if err != nil {
			return err
		}
	}
	return zw.Close()
}

// copyEntry opens e's source file, asks open for the writer of its archive
// entry (given the file's size), and copies the file into it.
func copyEntry(e entry, open func(size int64) (io.Writer, error)) error {
	f, err := os.Open(e.src)
	if err != nil {
		return fmt.Errorf("archive entry %s: %w", e.name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("archive entry %s: %w", e.name, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("archive entry %s: %s is not a regular file", e.name, e.src)
	}
	out, err := open(fi.Size())
	if err != nil {
		return fmt.Errorf("archive entry %s: %w", e.name, err)
	}
	if _, err := io.Copy(out, f); err != nil {
		return fmt.Errorf("archive entry %s: %w", e.name, err)
	}
	return nil
}
