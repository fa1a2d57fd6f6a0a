//go:build unix

package lane

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// Pair returns the two ends of a new lane: a connected pair of stream
// sockets. host is non-blocking (reads and writes go through the Go
// runtime's poller, and Close ends a read in progress); plugin stays
// blocking, as a child process expects a descriptor it inherits. Both are
// close-on-exec: the launch hands plugin to the child explicitly
// (exec.Cmd.ExtraFiles), and the host closes its copy once it has.
func Pair() (host, plugin *os.File, err error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("lane socketpair: %w", err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("lane socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "lane"), os.NewFile(uintptr(fds[1]), "lane (plugin's end)"), nil
}

// FromEnv is the plugin's end of the lane its host handed it (EnvFD), or
// nil when there is none. It checks the descriptor is a stream socket,
// makes it close-on-exec (the plugin's own children do not get it) and
// non-blocking, and unsets EnvFD. An EnvFD that names no stream socket
// is an error naming it.
func FromEnv() (*os.File, error) {
	v, ok := os.LookupEnv(EnvFD)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(EnvFD)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: not a descriptor number above 2", EnvFD, v)
	}
	typ, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s=%d: not a socket: %w", EnvFD, fd, err)
	case typ != syscall.SOCK_STREAM:
		return nil, fmt.Errorf("%s=%d: a socket of type %d, not a stream socket", EnvFD, fd, typ)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		return nil, fmt.Errorf("%s=%d: %w", EnvFD, fd, err)
	}
	return os.NewFile(uintptr(fd), "lane"), nil
}
