package pluginclient_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// hookBenchPlugin has an echo tool and a hook that passes everything.
func hookBenchPlugin() *pluginproto.Plugin {
	p := pluginproto.New("hookbench", "1")
	p.AddTool(pluginproto.Tool{Name: "echo"}, func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
		return &pluginproto.Result{Content: []pluginproto.Content{pluginproto.RawContent(r.Arguments)}}, nil
	})
	p.AddHook(func(context.Context, *pluginproto.HookRequest) (pluginproto.HookAnswer, error) {
		return pluginproto.Pass(), nil
	}, pluginproto.BeforeCall, pluginproto.AfterCall)
	return p
}

// BenchmarkHookRoundTrip measures one question to a hook plugin in another
// process (go-plugin, gRPC over a unix socket), beside one tool call of
// the same plugin in the same run, one at a time: µs/roundtrip is the
// wall time of one round trip (ns/op in µs), the figure a pass-through
// hook adds to a call's latency before the hook's own work.
//
//	go test -run '^$' -bench HookRoundTrip ./host/pluginclient/
func BenchmarkHookRoundTrip(b *testing.B) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=hook")
	c, _ := startPlugin(b, cmd)
	if _, err := c.Describe(b.Context(), "bench"); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"type":"text","text":"hello"}`)
	call := &pluginhost.CallRequest{Tool: "echo", Arguments: args}
	q := &tool.HookCall{Point: tool.BeforeCall, Hook: "pass", Item: tool.Item{Kind: tool.ItemTool, Name: "echo", Provider: "other"},
		Definition: json.RawMessage(`{"name":"echo","inputSchema":{"type":"object"}}`), Arguments: args}
	for _, bench := range []struct {
		name string
		once func() error
	}{
		{"call", func() error { _, err := c.CallTool(b.Context(), call); return err }},
		{"hook", func() error { _, err := c.Hook(b.Context(), q); return err }},
	} {
		b.Run(bench.name, func(b *testing.B) {
			if err := bench.once(); err != nil { // opens the stream
				b.Fatal(err)
			}
			b.ReportAllocs()
			began := time.Now()
			for b.Loop() {
				if err := bench.once(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(began).Microseconds())/float64(b.N), "µs/roundtrip")
		})
	}
}
