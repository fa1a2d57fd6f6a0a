//go:build unix

package wrapped

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/wrapped/wire"
	"github.com/plughost/plughost/internal/pluginhost"
)

// Where a wrapped call's cost goes, in one process (make bench runs these):
// against server-everything on Node 22, the wrapper's client alone (package
// wire), the same through the bridge (Proxy, exchange) without gRPC, and
// the go-sdk client the wrapper used before issue 34, whose JSON decoding
// allocated about 130 KB per call. bench/ (-only wrapped) compares the
// whole path with the server run directly; docs/operators.md "Wrapped
// servers: what a call costs" has the figures.

// referenceServer is server-everything's entry point and the pinned node.
func referenceServer(b *testing.B) (node, script string) {
	node, err := filepath.EvalSymlinks("../../conformance/node_modules/.bin/node")
	if err == nil {
		node, err = filepath.Abs(node)
	}
	if err != nil {
		b.Fatalf("%v (npm ci in conformance/ installs Node 22 and the reference servers)", err)
	}
	script, _ = filepath.Abs("../../conformance/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	return node, script
}

// inFlight is how many calls each benchmark keeps in flight (-cpu 1 runs
// them one at a time), as bench/'s wrapped section does.
const inFlight = 16

// run calls call b.N times, inFlight at once, and reports this process's
// CPU per call (cpu-µs/op: the client's, the server being a child, whose
// CPU getrusage(RUSAGE_SELF) leaves out).
func run(b *testing.B, call func() error) {
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	b.SetParallelism(max(1, inFlight/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := call(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
}

func BenchmarkBridgeCall(b *testing.B) {
	node, script := referenceServer(b)
	p, _, err := Start(b.Context(), &Options{Server: &declared.Server{Type: declared.TypeStdio, Command: node, Args: []string{script, "stdio"}}, Logger: hclog.NewNullLogger()})
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"message":"hello"}`)
	// The server asks for roots once it is initialized: a question the
	// first call may be handed (see exchange.go); answered with none.
	noRoots := func(string, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{"roots":[]}`), nil }
	run(b, func() error {
		_, err := pluginhost.Of(p).CallTool(context.Background(), &pluginhost.CallRequest{Tool: "echo", Arguments: args, AnswerInput: noRoots})
		return err
	})
}

func BenchmarkWireClientCall(b *testing.B) {
	node, script := referenceServer(b)
	conn, err := wire.Stdio(exec.Command(node, script, "stdio"), 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	init := json.RawMessage(`{"protocolVersion":"` + ProtocolVersion + `","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	if _, err := conn.Call(b.Context(), "initialize", init); err != nil {
		b.Fatal(err)
	}
	if err := conn.Notify(b.Context(), "notifications/initialized", nil); err != nil {
		b.Fatal(err)
	}
	params := json.RawMessage(`{"name":"echo","arguments":{"message":"hello"}}`)
	run(b, func() error {
		_, err := conn.Call(context.Background(), "tools/call", params)
		return err
	})
}

func BenchmarkGoSDKClientCall(b *testing.B) {
	node, script := referenceServer(b)
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(b.Context(), &mcp.CommandTransport{Command: exec.Command(node, script, "stdio")}, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := json.RawMessage(`{"message":"hello"}`)
	run(b, func() error {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: args})
		return err
	})
}
