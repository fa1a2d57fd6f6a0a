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
