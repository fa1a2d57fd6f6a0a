package manager

import (
	"os"
	"syscall"
)

// statOf returns the stat fingerprint of the file at path.
func statOf(path string) (statMark, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return statMark{}, false
	}
	return markOf(fi)
}

// markOf returns the stat fingerprint of fi (an os.Stat or File.Stat).
func markOf(fi os.FileInfo) (statMark, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statMark{}, false
	}
	return statMark{
		Size:    st.Size,
		MtimeNs: st.Mtim.Nano(),
		CtimeNs: st.Ctim.Nano(),
		Inode:   st.Ino,
		Device:  uint64(st.Dev), //nolint:unconvert // not uint64 on every arch
	}, true
}
