package registrytest

import "syscall"

// sysProcAttr runs a child as cred (nil: as this process) and kills it
// when the test process dies, so that a crashed test leaves no server
// behind.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}
