package manager

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// sysProcAttr starts a plugin without a console window of its own (a
// console program started by a host that has none, a desktop app's
// child, would otherwise open one).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NO_WINDOW}
}

// waitExited returns false at once: the reaper kills the job just after
// cmd.Wait; the job's handle names it, not a pid, so no reuse can hit
// another process.
func waitExited(int) bool { return false }

// hasExited reports false: a death just before a deliberate kill counts as
// the kill.
func hasExited(int) bool { return false }

// execByFD drops the plugin file cmd carries: Windows passes a child no
// descriptors but its standard three (os/exec refuses ExtraFiles there),
// and a running executable cannot be replaced on Windows anyway, so the
// file opened and hashed is the one the path names. No frame lane either
// (lane.Pair fails on Windows): calls go on gRPC.
func execByFD(cmd *exec.Cmd) { cmd.ExtraFiles = nil }

// procGroup is the job object a plugin's process is put in right after it
// starts, with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE: the host holds its only
// handle, so when the host exits, however it exits, Windows kills every
// process in the job; its children join it as they start. It replaces the
// unix process group (kill) and Linux's parent-death signal.
//
// Until AssignProcessToJobObject returns, the process runs outside the
// job: a child it starts in that window is not in it and survives the
// plugin. A Go plugin is still initialising its runtime then. The sandbox
// (package sandbox, on Windows) nests a second job with the policy's limits.
type procGroup struct{ job windows.Handle }

// newProcGroup makes the job and puts pid in it.
func newProcGroup(pid int) (procGroup, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return procGroup{}, fmt.Errorf("CreateJobObject: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return procGroup{}, fmt.Errorf("SetInformationJobObject: %w", err)
	}
	proc, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		windows.CloseHandle(job)
		return procGroup{}, fmt.Errorf("OpenProcess: %w", err)
	}
	defer windows.CloseHandle(proc)
	if err := windows.AssignProcessToJobObject(job, proc); err != nil {
		windows.CloseHandle(job)
		return procGroup{}, fmt.Errorf("AssignProcessToJobObject: %w", err)
	}
	return procGroup{job: job}, nil
}

// kill terminates every process in the job, or only pid when there is no
// job.
func (g procGroup) kill(pid int) error {
	if g.job != 0 {
		return windows.TerminateJobObject(g.job, 1)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// release closes the job's handle, which kills what is left in it.
func (g procGroup) release() {
	if g.job != 0 {
		windows.CloseHandle(g.job)
	}
}
