//go:build unix && !linux

package registrytest

import "syscall"

// sysProcAttr runs a child as cred (nil: as this process).
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
