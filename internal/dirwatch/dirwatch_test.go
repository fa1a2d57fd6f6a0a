package dirwatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A burst of writes in a watched directory is one change, reported once
// the directory is quiet; after Close nothing more is reported.
func TestBurstIsOneChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	changes := make(chan struct{}, 8)
	w, err := Start([]string{dir, dir}, 200*time.Millisecond, func(err error) { t.Error(err) }, func() { changes <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cert.pem", "key.pem", "cert.pem"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-changes:
	case <-time.After(10 * time.Second):
		t.Fatal("no change reported")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(changes); n != 0 {
		t.Errorf("%d more changes reported for one burst", n)
	}
}

func TestStartRefusesAMissingDirectory(t *testing.T) {
	t.Parallel()
	if _, err := Start([]string{filepath.Join(t.TempDir(), "none")}, time.Millisecond, func(error) {}, func() {}); err == nil {
		t.Error("Start watched a directory that does not exist")
	}
}
