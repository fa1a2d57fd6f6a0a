package streamable

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// BenchmarkHTTPCall is one tools/call round trip over a real loopback
// socket with net/http's client: in a 2025-11-25 session (the session
// looked up by its id) and stateless (2026-07-28: the _meta and routing
// headers checked, a session of its own made and closed per request). The
// two run in the same process against the same server, so their ratio is
// the cost of statelessness:
//
//	go test -run '^$' -bench HTTPCall -benchmem ./host/mcp/streamable
func BenchmarkHTTPCall(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + PathMCP
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, mcp.NewServer(mcptest.Echo{}, nil), ln, &Options{RateLimit: -1}) }()
	defer func() { cancel(); <-done }()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

	post := func(b *testing.B, header map[string]string, body string) string {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%d %s", resp.StatusCode, out)
		}
		return resp.Header.Get("Mcp-Session-Id")
	}

	b.Run("session", func(b *testing.B) {
		sid := post(b, nil, mcptest.InitMsg("2025-11-25"))
		h := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`
		b.ReportAllocs()
		for b.Loop() {
			post(b, h, body)
		}
	})
	b.Run("stateless", func(b *testing.B) {
		h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		b.ReportAllocs()
		for b.Loop() {
			post(b, h, body)
		}
	})
}
