package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/plughost/plughost/host/audit"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/metrics"
	"github.com/plughost/plughost/host/tool"
)

// What watching calls costs: BenchmarkCallObserved runs BenchmarkCallEcho's
// round trip (in-memory transport, a catalog that answers at once, so
// that the host's own cost is all there is) without Options.OnCallEnd,
// with the Prometheus metrics, and with the metrics and an audit log
// (written to io.Discard: the JSON line, not the disk). Compare the
// sub-benchmarks' ns/op for the overhead's ratio (docs/reference.md, "Metrics").
func BenchmarkCallObserved(b *testing.B) {
	m := metrics.New(nil)
	a := audit.New(io.Discard, nil)
	for _, bc := range []struct {
		name string
		on   func(*mcp.CallEnd)
	}{
		{"off", nil},
		{"metrics", m.CallEnd},
		{"metrics+audit", func(e *mcp.CallEnd) { m.CallEnd(e); a.CallEnd(e) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr := &chanTransport{in: make(chan []byte), out: make(chan struct{}, 1)}
			done := make(chan error, 1)
			go func() {
				done <- mcp.NewServer(routed{}, &mcp.Options{OnCallEnd: bc.on}).Serve(context.Background(), tr)
			}()
			tr.in <- []byte(mcptest.InitMsg("2025-11-25"))
			<-tr.out
			tr.in <- []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			msg := []byte(`{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)
			b.ReportAllocs()
			for b.Loop() {
				tr.in <- msg
				<-tr.out
			}
			close(tr.in)
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// routed is mcptest.Echo naming its provider, as the catalog does.
type routed struct{ mcptest.Echo }

func (r routed) StartCall(ctx context.Context, c *tool.Call, done func(json.RawMessage, error)) {
	c.Provider = "echo"
	r.Echo.StartCall(ctx, c, done)
}

// chanTransport hands messages over channels and tells of each one written.
type chanTransport struct {
	in  chan []byte
	out chan struct{}
}

func (t *chanTransport) Read() ([]byte, error) {
	b, ok := <-t.in
	if !ok {
		return nil, io.EOF
	}
	return b, nil
}

func (t *chanTransport) Write([]byte) error {
	t.out <- struct{}{}
	return nil
}
