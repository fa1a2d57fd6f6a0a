package rundir

import (
	"errors"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// lockName is the file in a run directory whose lock its owner holds:
// LockFileEx locks files, not directories.
const lockName = "lock"

// lockDir opens (making it if missing) the lock file of the run directory
// at path and takes its exclusive lock without waiting; it fails with
// errTaken when another process holds it or the directory is gone (a
// sweeper removed it). The handle is not inheritable, so plugins do not
// keep the lock alive; closing it, or the process's death, releases it.
//
// A sweeper that makes the lock file of a directory whose owner has not
// yet locked it takes the lock first: the owner then finds it taken and
// tries another name, as on unix.
func lockDir(path string) (io.Closer, error) {
	name, err := windows.UTF16PtrFromString(filepath.Join(path, lockName))
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(name, windows.GENERIC_READ|windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil, windows.OPEN_ALWAYS,
		windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if errors.Is(err, windows.ERROR_PATH_NOT_FOUND) || errors.Is(err, windows.ERROR_FILE_NOT_FOUND) ||
		errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		// Gone, or being deleted by a sweeper (a file pending deletion
		// refuses to be opened with access denied).
		return nil, &os.PathError{Op: "open", Path: path, Err: errTaken}
	} else if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(h), filepath.Join(path, lockName))
	err = windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		f.Close()
		return nil, &os.PathError{Op: "LockFileEx", Path: path, Err: errTaken}
	} else if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "LockFileEx", Path: path, Err: err}
	}
	return f, nil
}

// removeLocked releases the lock, then deletes the directory at path:
// Windows refuses to delete a file open without FILE_SHARE_DELETE, the
// lock file included. In between a sweeper may take the lock and delete
// the directory too; whichever finishes second may fail on a file the
// other removed, and says so.
func removeLocked(path string, lock io.Closer) error {
	lock.Close()
	return os.RemoveAll(path)
}

// ownDirectory reports whether path is a directory, not a symbolic link
// or junction. Ownership needs no check: %LOCALAPPDATA% (or the user's
// Temp) is the user's alone.
func ownDirectory(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}
