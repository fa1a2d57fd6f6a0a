package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sourceFiles writes a program and a document with the given mode and
// mtime: what a build machine's file system adds to the files' bytes.
func sourceFiles(t *testing.T, mode os.FileMode, mtime time.Time) []entry {
	t.Helper()
	dir := t.TempDir()
	es := []entry{{name: "p/plughost", executable: true}, {name: "p/README.md"}, {name: "p/plugins/echo", executable: true}}
	for i, content := range []string{"\x7fELF program", "# read me\n", "\x7fELF plugin"} {
		es[i].src = filepath.Join(dir, filepath.Base(es[i].name))
		if err := os.WriteFile(es[i].src, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(es[i].src, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		if err := os.Chtimes(es[i].src, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	return es
}

// TestArchivesTakeOnlyTheBytes: the same files with other modes, mtimes
// and at other paths give byte-identical archives, whose entries carry
// the release's mtime, owner 0:0, mode 0755 or 0644, in the order given,
// behind a gzip header with no name and no time.
func TestArchivesTakeOnlyTheBytes(t *testing.T) {
	epoch := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	a := sourceFiles(t, 0o600, time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	b := sourceFiles(t, 0o777, time.Now())
	for _, format := range []struct {
		name  string
		write func(io.Writer, []entry, time.Time) error
	}{{"tar.gz", writeTarGz}, {"zip", writeZip}} {
		var outA, outB bytes.Buffer
		if err := format.write(&outA, a, epoch); err != nil {
			t.Fatal(err)
		}
		if err := format.write(&outB, b, epoch); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(outA.Bytes(), outB.Bytes()) {
			t.Errorf("%s: the archives of the same bytes differ (%d and %d bytes)", format.name, outA.Len(), outB.Len())
		}
	}

	var tgz bytes.Buffer
	if err := writeTarGz(&tgz, a, epoch); err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(&tgz)
	if err != nil {
		t.Fatal(err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() {
		t.Errorf("gzip header name %q, mtime %v: want neither", gz.Name, gz.ModTime)
	}
	tr := tar.NewReader(gz)
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			if i != len(a) {
				t.Errorf("tar has %d entries, want %d", i, len(a))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want := a[i]
		if h.Name != want.name || h.Mode != want.mode() || !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("tar entry %d: %s mode %o mtime %v owner %d:%d (%q:%q); want %s mode %o mtime %v owner 0:0",
				i, h.Name, h.Mode, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname, want.name, want.mode(), epoch)
		}
	}

	var z bytes.Buffer
	if err := writeZip(&z, a, epoch); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(z.Bytes()), int64(z.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != len(a) {
		t.Fatalf("zip has %d entries, want %d", len(zr.File), len(a))
	}
	for i, f := range zr.File {
		if f.Name != a[i].name || f.Mode() != os.FileMode(a[i].mode()) || !f.Modified.Equal(epoch) {
			t.Errorf("zip entry %d: %s mode %v mtime %v; want %s mode %v mtime %v", i, f.Name, f.Mode(), f.Modified, a[i].name, os.FileMode(a[i].mode()), epoch)
		}
	}
}

// TestArchiveRefusesWhatIsNotAFile: a directory where a program should be
// is an error naming the entry, and no archive is left behind.
func TestArchiveRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.tar.gz")
	err := writeArchive(path, Target{"linux", "amd64"}, []entry{{name: "p/plughost", src: dir}}, time.Unix(0, 0))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("p/plughost")) {
		t.Fatalf("err = %v, want one naming p/plughost", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a failed archive was left at %s", path)
	}
}
