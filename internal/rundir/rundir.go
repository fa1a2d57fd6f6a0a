// Package rundir gives a plughost process one directory of its own for
// everything that lives only as long as the process: its plugins' unix
// socket directories and tmp directories. A stop removes it whole; a host
// that died (SIGKILL, a crash, the machine's OOM killer) leaves it behind,
// and the next host to start removes it.
//
// The directory is <base>/plughost-<pid>-<random>, where base is
// $XDG_RUNTIME_DIR when set, else the system tmp (see Base; on Windows,
// %LOCALAPPDATA%\plughost\run). Its owner holds an exclusive lock for the
// process's life (flock(2) on the directory itself on unix, LockFileEx on
// a file "lock" in it on Windows); the kernel releases it when the process
// dies, however it dies. Sweep removes the sibling directories whose lock
// it can take, and so never a live host's:
//
//	Sweep(base)            // a dead host's directories go
//	d, err := Create(base) // this host's, locked
//	...
//	d.Remove()             // at the stop
//
// A sweeper and a host creating its directory can race (the sweeper may
// lock a directory between its mkdir and its owner's lock): Create
// notices, by finding its directory gone or its lock taken, and tries a
// new name.
package rundir

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// prefix starts every run directory's name.
const prefix = "plughost-"

// maxBase is the longest base whose unix sockets' paths fit in a
// sockaddr_un (103 bytes and a NUL on macOS, 107 on Linux): under it go
// "/plughost-<pid>-<random>/" (at most 29 bytes) and go-plugin's
// "plugin-dir<random>/plugin<random>" (at most 37).
const maxBase = 103 - 29 - 37

// Base is where run directories are made on this machine: see [BaseFor].
func Base() string { return BaseFor(runtime.GOOS, os.Getenv, os.TempDir()) }

// BaseFor is where run directories are made on goos, given its environment
// (getenv) and its system tmp (tmp, os.TempDir there).
//
// On unix: $XDG_RUNTIME_DIR (a per-user tmpfs emptied at logout) when set,
// else the system tmp ($TMPDIR), else /tmp, the first whose path is short
// enough for the unix sockets in it (a macOS $TMPDIR is not).
//
// On Windows: %LOCALAPPDATA%\plughost\run, the user's own non-roaming
// application data (its ACL admits only the user), else tmp. Not the
// user's Temp itself, though it is per-user too: Storage Sense and Disk
// Cleanup delete files there that have not been touched for days, which a
// host serving for weeks would lose under its plugins. go-plugin listens
// on TCP loopback on Windows, not on unix sockets, so no path length
// bounds the choice.
func BaseFor(goos string, getenv func(string) string, tmp string) string {
	if goos == "windows" {
		if d := getenv("LOCALAPPDATA"); d != "" {
			return d + `\plughost\run`
		}
		return tmp
	}
	for _, d := range []string{getenv("XDG_RUNTIME_DIR"), tmp} {
		if d != "" && len(d) <= maxBase {
			return d
		}
	}
	return "/tmp"
}

// Dir is a run directory, locked by this process until Remove.
type Dir struct {
	path string
	lock io.Closer // holds the lock until closed (see lockDir)
}

// Path is the directory's absolute path.
func (d *Dir) Path() string { return d.path }

// Create makes and locks a new run directory under base, mode 0711 on
// unix: others may pass through it to what it grants them (a sandboxed
// plugin running as another uid, to its own socket and tmp directory) but
// not list it. (On Windows the mode bits mean nothing; the directory
// inherits base's ACL.)
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
		lock, err := lockDir(path)
		if errors.Is(err, errTaken) {
			continue // a sweeper holds it, or removed it already: take another name
		} else if err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("run directory: %w", err)
		}
		if err := os.Chmod(path, 0o711); err != nil {
			lock.Close()
			os.RemoveAll(path)
			return nil, fmt.Errorf("run directory: %w", err)
		}
		return &Dir{path: path, lock: lock}, nil
	}
	return nil, fmt.Errorf("run directory: no free name under %s after 10 tries", base)
}

// errTaken says that another process holds a run directory's lock, or
// removed the directory.
var errTaken = errors.New("locked or removed by another process")

// Remove deletes the directory with everything in it and releases its
// lock. Whatever still runs in it (a plugin not yet reaped) loses its
// files; call it last.
func (d *Dir) Remove() error { return removeLocked(d.path, d.lock) }

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
		if !ownDirectory(path) {
			continue
		}
		lock, err := lockDir(path)
		if errors.Is(err, errTaken) {
			continue // a live host's, or gone already
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := removeLocked(path, lock); err != nil {
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
