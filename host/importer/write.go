package importer

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteNew writes a file whole or not at all, through a temporary file
// renamed (with force) or linked (without: an existing file stays) into
// place, so that the host watching the directory never reads half of one.
func WriteNew(path string, content []byte, mode fs.FileMode, force bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plughost-import-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return err
	}
	if err := errors.Join(tmp.Chmod(mode), tmp.Close()); err != nil {
		return err
	}
	if force {
		return os.Rename(tmp.Name(), path)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists (--force overwrites it)", path)
	} else if err != nil {
		return err
	}
	return nil
}

// statPath reports whether path exists and is a directory.
func statPath(path string) (isDir, ok bool) {
	st, err := os.Stat(path)
	return err == nil && st.IsDir(), err == nil
}

// firstLineOf returns the first line of a file (at most 256 bytes), ""
// when it cannot be read.
func firstLineOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	return strings.TrimSpace(line)
}

// writeSecret writes value to the file at path, mode 0600, in a directory
// of mode 0700 made when missing; an old file is replaced.
func writeSecret(path, value string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return WriteNew(path, []byte(value+"\n"), 0o600, true)
}

// copyNew copies the file from to the path to, making its directory (mode
// 0700) when missing; it reports false, copying nothing, when to exists: a
// server's data is never overwritten. The copy is mode 0644 in a
// directory only its owner enters: private all the same, and readable by
// the server when plughost runs as root, which gives the data directory,
// not what is in it, to the unprivileged user the server runs as (the
// server replaces the file, so it becomes the server's at its first
// write).
func copyNew(from, to string) (bool, error) {
	if _, err := os.Lstat(to); err == nil {
		return false, nil
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return false, err
	}
	return true, WriteNew(to, b, 0o644, false)
}
