package sandbox

import (
	"errors"
	"io/fs"
)

// allocated is the disk space the file fi describes occupies, as its size
// rounded up to whole 4 KiB clusters (NTFS's default): a FileInfo on
// Windows does not carry the allocation size, and asking for it costs a
// handle per file.
func allocated(fi fs.FileInfo) int64 {
	return (fi.Size() + minEntry - 1) / minEntry * minEntry
}

// mountUse is never called on Windows: a plugin's tmp is a tmpfs only in a
// Linux mount namespace.
func mountUse(string) (int64, error) {
	return 0, errors.New("no tmpfs on Windows")
}
