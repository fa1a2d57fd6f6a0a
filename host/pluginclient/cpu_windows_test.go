package pluginclient

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used (user and system), not
// counting its children.
func processCPU() time.Duration {
	var created, exited, kernel, user syscall.Filetime
	p, err := syscall.GetCurrentProcess()
	if err == nil {
		err = syscall.GetProcessTimes(p, &created, &exited, &kernel, &user)
	}
	if err != nil {
		panic(err)
	}
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration(ticks(kernel)+ticks(user)) * 100 // 100 ns ticks
}
