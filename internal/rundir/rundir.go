//go:build unix

// Package rundir gives a plughost process one directory of its own for
// everything that lives only as long as the process: its plugins' unix
// socket directories and tmp directories. A stop removes it whole; a host
// that died (SIGKILL, a crash, the machine's OOM killer) leaves it behind,
// and the next host to start removes it.
//
// The directory is <base>/plughost-<pid>-<random>, where base is
// $XDG_RUNTIME_DIR when set, else the system tmp (see Base). Its owner holds an
// exclusive flock(2) on the directory itself for the process's life; the
// kernel releases it when the process dies, however it dies. Sweep removes
// the sibling directories whose lock it can take, and so never a live
// host's:
//
//	Sweep(base)            // a dead host's directories go
//	d, err := Create(base) // this host's, locked
//	...
//	d.Remove()             // at the stop
//
// A sweeper and a host creating its directory can race (the sweeper may
// lock a directory between its mkdir and its owner's flock): Create
// notices, by finding its directory gone once locked, and tries a new name.
package rundir

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// prefix starts every run directory's name.
const prefix = "plughost-"

// maxBase is the longest base whose unix sockets' paths fit in a
// sockaddr_un (103 bytes and a NUL on macOS, 107 on Linux): under it go
// "/plughost-<pid>-<random>/" (at most 29 bytes) and go-plugin's
// "plugin-dir<random>/plugin<random>" (at most 37).
const maxBase = 103 - 29 - 37

// Base is where run directories are made: $XDG_RUNTIME_DIR (a per-user
// tmpfs emptied at logout) when set, else the system tmp ($TMPDIR), else
// /tmp, the first whose path is short enough for the sockets in it (a
// macOS $TMPDIR is not).
func Base() string {
	for _, d := range []string{os.Getenv("XDG_RUNTIME_DIR"), os.TempDir()} {
		if d != "" && len(d) <= maxBase {
			return d
		}
	}
	return "/tmp"
}

// Dir is a run directory, locked by this process until Remove.
type Dir struct {
	path string
	lock *os.File // the directory itself, opened and flocked
}

// Path is the directory's absolute path.
func (d *Dir) Path() string { return d.path }

// Create makes and locks a new run directory under base, mode 0711:
// others may pass through it to what it grants them (a sandboxed plugin
// running as another uid, to its own socket and tmp directory) but not
// list it.
func Create(base string) (*Dir, error) {
	base, err := filepath.Abs(base)
	if err != nil {
		return nil, err
	}
	for range 10 {
		path := filepath.Join(base, fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), rand.Uint32()))
		if err := os.Mkdir(path, 0o700); errors.Is(err, os.ErrExist) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("run directory: %w", err)
		}
		f, err := lockDir(path)
		if errors.Is(err, errTaken) {
			continue // a sweeper holds it, or removed it already: take another name
		} else if err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("run directory: %w", err)
		}
		if err := os.Chmod(path, 0o711); err != nil {
			os.Remove(path)
			f.Close()
			return nil, fmt.Errorf("run directory: %w", err)
		}
		return &Dir{path: path, lock: f}, nil
	}
	return nil, fmt.Errorf("run directory: no free name under %s after 10 tries", base)
}

// errTaken says that another process holds a run directory's lock, or
// removed the directory.
var errTaken = errors.New("locked or removed by another process")

// lockDir opens the directory at path and takes its lock without
// waiting; it fails with errTaken when another process holds it, or when
// path is no longer the directory opened (a sweeper removed it in between).
func lockDir(path string) (*os.File, error) {
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

// Remove deletes the directory with everything in it, then releases its
// lock. Whatever still runs in it (a plugin not yet reaped) loses its
// files; call it last.
func (d *Dir) Remove() error {
	err := os.RemoveAll(d.path)
	d.lock.Close()
	return err
}

// Sweep removes the run directories under base that no live process
// holds (those of hosts that died) and returns their paths. It passes
// over directories of other users and anything that is not a run
// directory (a name other than plughost-<pid>-<number>, a symbolic link).
func Sweep(base string) ([]string, error) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !isRunName(e.Name()) {
			continue
		}
		path := filepath.Join(base, e.Name())
		var st unix.Stat_t
		if unix.Lstat(path, &st) != nil || int(st.Uid) != os.Geteuid() {
			continue
		}
		f, err := lockDir(path)
		if errors.Is(err, errTaken) {
			continue // a live host's, or gone already
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		err = os.RemoveAll(path)
		f.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}

// isRunName reports whether name is plughost-<pid>-<number>.
func isRunName(name string) bool {
	pid, n, ok := strings.Cut(strings.TrimPrefix(name, prefix), "-")
	if !ok || !strings.HasPrefix(name, prefix) {
		return false
	}
	_, err1 := strconv.ParseUint(pid, 10, 32)
	_, err2 := strconv.ParseUint(n, 10, 32)
	return err1 == nil && err2 == nil
}
