package mcp

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var created, exited, kernel, user syscall.Filetime
	p, err := syscall.GetCurrentProcess()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.GetProcessTimes(p, &created, &exited, &kernel, &user); err != nil {
		t.Fatal(err)
	}
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration(ticks(kernel)+ticks(user)) * 100 // 100 ns ticks
}
