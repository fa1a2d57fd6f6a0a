package pluginclient

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// BenchmarkCallsV2 measures an echo call through the host's Client and the
// SDK's server over an in-memory gRPC connection (bufconn; no process hop),
// with 1 and 16 calls in flight. cpu-ns/op is the CPU time of the process,
// host and plugin together, per call.
func BenchmarkCallsV2(b *testing.B) {
	for _, inflight := range []int{1, 16} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			p := pluginproto.New("bench", "0")
			p.AddTool(pluginproto.Tool{Name: "echo"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
				return &pluginproto.Result{Content: []pluginproto.Content{pluginproto.RawContent(r.Arguments)}}, nil
			})
			c, _ := servePlugin(b, p)
			benchmarkCalls(b, c, inflight, json.RawMessage(`{"type":"text","text":"hello"}`), "cpu-ns/op")
		})
	}
}

// benchmarkCalls makes b.N calls of echo with args, inflight at a time,
// and reports the process's CPU time per call as metric.
func benchmarkCalls(b *testing.B, c interface {
	CallTool(context.Context, *pluginhost.CallRequest) (json.RawMessage, error)
}, inflight int, args json.RawMessage, metric string) {
	req := &pluginhost.CallRequest{Tool: "echo", Arguments: args}
	if _, err := c.CallTool(b.Context(), req); err != nil { // opens the stream
		b.Fatal(err)
	}
	b.ReportAllocs()
	var n atomic.Int64
	cpu := processCPU()
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
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), metric)
}
