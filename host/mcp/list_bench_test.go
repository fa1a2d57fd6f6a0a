package mcp

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/plughost/plughost/host/tool"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// listCatalog lists n tools in one page, each about 300 bytes as a
// plugin's tool with a small input schema would be.
type listCatalog struct {
	mcptest.NoSurface
	tools []json.RawMessage
}

func newListCatalog(n int) listCatalog {
	c := listCatalog{tools: make([]json.RawMessage, n)}
	for i := range c.tools {
		c.tools[i] = json.RawMessage(`{"name":"tool_` + strconv.Itoa(i) + `","description":"Does thing number ` + strconv.Itoa(i) +
			` of the plugin, briefly.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"a path"},` +
			`"limit":{"type":"integer","minimum":1}},"required":["path"]},"annotations":{"readOnlyHint":true}}`)
	}
	return c
}

func (c listCatalog) ListTools(string) ([]json.RawMessage, string, error) { return c.tools, "", nil }
func (listCatalog) StartCall(_ context.Context, _ *tool.Call, done func(json.RawMessage, error)) {
	done(nil, tool.ErrUnknownTool)
}
func (listCatalog) Subscribe(func(tool.Change)) func() { return func() {} }

// BenchmarkToolsList1000 is one tools/list of 1000 tools through the
// in-memory transport (issue 6's target: p50 ≤ 2 ms).
func BenchmarkToolsList1000(b *testing.B) {
	tr := &benchTransport{in: make(chan []byte), out: make(chan int, 64)}
	done := make(chan error, 1)
	go func() { done <- NewServer(newListCatalog(1000), nil).Serve(context.Background(), tr) }()
	defer func() {
		close(tr.in)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}()
	tr.in <- []byte(mcptest.InitMsg("2025-11-25"))
	<-tr.out
	msg := []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	tr.in <- msg
	if n := <-tr.out; n < 1000*250 {
		b.Fatalf("response of %d bytes: too short for 1000 tools", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		tr.in <- msg
		<-tr.out
	}
}
