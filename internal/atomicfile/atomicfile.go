// Package atomicfile writes a file whole or not at all: to a temporary
// file beside it (mode 0600), synced, then renamed over it, so that a
// reader (a running plughost following the file, a configuration manager)
// never sees half of one, and a crash leaves the old file or the new.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with b. The file gets mode 0600. On error path is
// unchanged and the temporary file is removed.
func Write(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
