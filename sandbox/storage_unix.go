//go:build unix

package sandbox

import (
	"io/fs"
	"syscall"
)

// allocated is the disk space the file fi describes occupies: its blocks,
// which a sparse file has fewer of than its size says.
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}

// mountUse returns the bytes in use on the filesystem at path (statfs).
func mountUse(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Blocks-st.Bfree) * int64(st.Bsize), nil
}
