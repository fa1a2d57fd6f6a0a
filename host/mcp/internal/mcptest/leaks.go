package mcptest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// RunCheckingLeaks runs the tests, then fails the run (returns a non-zero
// code for os.Exit) if a goroutine whose stack mentions one of pkgs
// outlives them by more than 5 seconds.
func RunCheckingLeaks(m *testing.M, pkgs ...string) int {
	code := m.Run()
	if code == 0 {
		if leaked := waitNoGoroutines(pkgs, 5*time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines leaked:\n%s\n", leaked)
			code = 1
		}
	}
	return code
}

// waitNoGoroutines waits up to d for every goroutine whose stack mentions
// one of pkgs (other than test functions) to end; it returns the stacks of
// those that did not.
func waitNoGoroutines(pkgs []string, d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if mentions(g, pkgs) && !strings.Contains(g, "testing.tRunner") &&
				!strings.Contains(g, "waitNoGoroutines") && !strings.Contains(g, "testing.(*B)") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(10 * time.Millisecond) // polling a condition no event announces
	}
}

func mentions(stack string, pkgs []string) bool {
	for _, p := range pkgs {
		if strings.Contains(stack, p) {
			return true
		}
	}
	return false
}
