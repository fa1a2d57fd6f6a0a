package manager

import (
	"errors"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts a plugin in its own process group, so that the whole group
// can be killed, and has the kernel SIGKILL it if the host dies. (The signal
// follows the death of the host thread that started it; Go only ends threads
// whose goroutine exits while locked to them, which the manager never does.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitExited blocks until the process pid has exited, without reaping it:
// it stays a zombie, so its pid and process group id cannot be reused until
// cmd.Wait reaps it. It reports whether it waited.
func waitExited(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err == nil // on error (not our child?) cmd.Wait reports it
		}
	}
}

// hasExited reports whether the process pid has exited (it is a zombie
// not yet reaped), without waiting and without reaping it.
func hasExited(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo != 0 // WNOHANG with nothing to report leaves it zero
}

// execByFD makes cmd execute the file it carries as its first extra file
// (the plugin file the host opened and hashed: pluginFile) rather than
// open its path again: the child's fd 3, through its /proc/self/fd link,
// which needs no search permission on the file's directory either.
func execByFD(cmd *exec.Cmd) {
	cmd.Path = "/proc/self/fd/3"
}
