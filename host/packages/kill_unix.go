//go:build unix

package packages

import "syscall"

// killGroup kills the process group pid leads (the sandbox stage starts
// its own), so that a step's children die with it.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
