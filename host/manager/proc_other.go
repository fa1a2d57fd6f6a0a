//go:build unix && !linux

package manager

import (
	"os/exec"
	"syscall"

	"github.com/plughost/plughost/internal/lane"
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
// is opened again by name, as before (see pluginFile). The frame lane,
// if any, stays: it moves to fd 3.
func execByFD(cmd *exec.Cmd) {
	if i := lane.Index(cmd.Env, len(cmd.ExtraFiles)); i > 0 {
		cmd.ExtraFiles = cmd.ExtraFiles[i : i+1]
		cmd.Env = append(cmd.Env, lane.Env(3))
		return
	}
	cmd.ExtraFiles = nil
}
