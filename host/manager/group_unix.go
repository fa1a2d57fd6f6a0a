//go:build unix

package manager

import (
	"errors"
	"fmt"
	"syscall"
)

// procGroup is a plugin's process group: the plugin leads it (sysProcAttr
// sets Setpgid; a Launcher's command must keep that, or Setsid), so that
// its children are killed with it.
type procGroup struct{ leads bool }

// newProcGroup reports whether pid leads its own process group; when not,
// only the process can be killed.
func newProcGroup(pid int) (procGroup, error) {
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		return procGroup{}, err
	}
	if pgid != pid {
		return procGroup{}, fmt.Errorf("it is in process group %d", pgid)
	}
	return procGroup{leads: true}, nil
}

// kill sends SIGKILL to the group pid leads, or only to pid; a process
// already gone is no error.
func (g procGroup) kill(pid int) error {
	target := pid
	if g.leads {
		target = -pid
	}
	if err := syscall.Kill(target, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// release has nothing to free on unix.
func (procGroup) release() {}
