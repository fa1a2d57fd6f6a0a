package pluginproto_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plughost/plughost/pluginproto"
)

// BenchmarkHostCPU measures an echo call through the host's Client to a
// plugin in another process (go-plugin, gRPC over a unix socket), with 1 and
// 16 calls in flight: helperPlugin (this SDK, contract 2) and the frozen
// contract-1 plugin (through the adapter). host-cpu-ns/op is the CPU time of
// the host's process alone per call; the plugin's is not counted.
func BenchmarkHostCPU(b *testing.B) {
	plugins := []struct {
		name string
		cmd  func() *exec.Cmd
	}{
		{"contract2", func() *exec.Cmd {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), helperEnv+"=1")
			return cmd
		}},
		{"contract1", func() *exec.Cmd { return exec.Command(buildContract1(b)) }},
	}
	for _, p := range plugins {
		for _, inflight := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/inflight=%d", p.name, inflight), func(b *testing.B) {
				c, _ := startPlugin(b, p.cmd())
				req := &pluginproto.CallRequest{Tool: "echo", Arguments: json.RawMessage(`{"Text":"hello"}`)}
				if _, err := c.CallTool(b.Context(), req); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				var n atomic.Int64
				cpu := hostCPU()
				b.ResetTimer()
				var wg sync.WaitGroup
				for range inflight {
					wg.Go(func() {
						for n.Add(1) <= int64(b.N) {
							if _, err := c.CallTool(b.Context(), req); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(hostCPU()-cpu)/float64(b.N), "host-cpu-ns/op")
			})
		}
	}
}

// hostCPU is the CPU time of this process (the host), not of its children.
func hostCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
