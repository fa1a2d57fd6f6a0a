//go:build unix

package serve

import (
	"io/fs"
	"syscall"
)

// writableBy reports whether a directory with these attributes is writable
// by uid/gid (root writes everywhere).
func writableBy(st fs.FileInfo, uid, gid int) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || uid == 0 {
		return true
	}
	mode := st.Mode().Perm()
	switch {
	case int(sys.Uid) == uid:
		return mode&0o200 != 0
	case int(sys.Gid) == gid:
		return mode&0o020 != 0
	default:
		return mode&0o002 != 0
	}
}
