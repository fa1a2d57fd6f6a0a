//go:build unix

package pluginclient

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used (user and system), not
// counting its children.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
