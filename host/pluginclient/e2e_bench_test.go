package pluginclient_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/plughost/plughost/host/pluginclient"
)

// BenchmarkHostCPU measures an echo call through the host's Client to a
// plugin in another process (go-plugin, gRPC over a unix socket), with 1 and
// 16 calls in flight: helperPlugin (this SDK, contract 2) and the frozen
// contract-1 plugin (through the adapter). host-cpu-ns/op is the CPU time of
// the host's process alone per call; the plugin's is not counted. The
// contract-2 plugin's calls go on the frame lane, or on gRPC with
// PLUGHOST_TEST_TRANSPORT=grpc.
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
				if _, err := c.Describe(b.Context(), "bench"); err != nil { // the lane is taken at Describe
					b.Fatal(err)
				}
				pluginclient.BenchmarkCallsOf(b, c, inflight, json.RawMessage(`{"Text":"hello"}`), "host-cpu-ns/op")
			})
		}
	}
}
