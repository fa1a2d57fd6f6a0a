//go:build unix && !linux

package manager

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts a plugin in its own process group, so that the whole group
// can be killed. (Only Linux has a parent-death signal.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited returns false at once: without a portable way to wait for an
// exit without reaping, the reaper kills the group just after cmd.Wait,
// accepting the tiny chance that the group id has been reused in between.
func waitExited(int) bool { return false }

// hasExited reports false: without a way to look at an exit without
// reaping it, a death just before a deliberate kill counts as the kill.
func hasExited(int) bool { return false }

// execByFD leaves cmd executing its path: without /proc/self/fd the file
// is opened again by name, as before (see pluginFile).
func execByFD(cmd *exec.Cmd) { cmd.ExtraFiles = nil }
