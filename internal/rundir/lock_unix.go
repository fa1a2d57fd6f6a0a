//go:build unix

package rundir

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// lockDir opens the directory at path and takes its flock without
// waiting; it fails with errTaken when another process holds it, or when
// path is no longer the directory opened (a sweeper removed it in between).
// The lock is the open directory: closing it releases the lock.
func lockDir(path string) (io.Closer, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, &os.PathError{Op: "open", Path: path, Err: errTaken}
	} else if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: path, Err: errTaken}
	} else if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	var opened, named unix.Stat_t
	if err := unix.Fstat(fd, &opened); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if err := unix.Lstat(path, &named); err != nil || named.Ino != opened.Ino || named.Dev != opened.Dev {
		f.Close()
		return nil, &os.PathError{Op: "lock", Path: path, Err: errTaken}
	}
	return f, nil
}

// removeLocked deletes the directory at path, then releases its lock: no
// sweeper can take it while it is being removed.
func removeLocked(path string, lock io.Closer) error {
	err := os.RemoveAll(path)
	lock.Close()
	return err
}

// ownDirectory reports whether path is a directory (not a symbolic link)
// that this process's user owns: in a shared tmp, other users' run
// directories are theirs to sweep.
func ownDirectory(path string) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == os.Geteuid()
}
