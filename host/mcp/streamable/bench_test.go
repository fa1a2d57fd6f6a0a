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
	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/internal/jsonrpc"
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
	_, post := benchServer(b, mcptest.Echo{}, nil)

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

// benchServer serves catalog over a real loopback socket for a benchmark,
// and returns its URL and a function that POSTs one message (failing the
// benchmark on any status but 200) and returns the response's
// Mcp-Session-Id and body.
func benchServer(b *testing.B, catalog mcp.Catalog, opts *mcp.Options) (string, func(*testing.B, map[string]string, string) string) {
	return benchServerWith(b, catalog, opts, &Options{RateLimit: -1})
}

// benchServerWith is benchServer with the transport's options.
func benchServerWith(b *testing.B, catalog mcp.Catalog, opts *mcp.Options, sopts *Options) (string, func(*testing.B, map[string]string, string) string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + PathMCP
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, mcp.NewServer(catalog, opts), ln, sopts) }()
	b.Cleanup(func() { cancel(); <-done })
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	return url, func(b *testing.B, header map[string]string, body string) string {
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
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			return sid
		}
		return string(out)
	}
}

// BenchmarkHTTPTask is a task's round trip over a real loopback socket
// (2026-07-28's tasks extension, tasks kept in process): a tools/call
// that goes on as a task at once (its provider detaches it and returns),
// then tasks/get until the task is completed — beside a plain stateless
// call on the same server. Their ratio is what a task costs a call that
// did not need one:
//
//	go test -run '^$' -bench HTTPTask -benchmem ./host/mcp/streamable
func BenchmarkHTTPTask(b *testing.B) {
	svc := tasks.New(tasks.Options{})
	b.Cleanup(func() { svc.Close() })
	_, post := benchServer(b, mcptest.NewCatalog(), &mcp.Options{Tasks: svc})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` +
		`{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	b.Run("call", func(b *testing.B) {
		h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},` + meta + `}}`
		b.ReportAllocs()
		for b.Loop() {
			post(b, h, body)
		}
	})
	b.Run("task", func(b *testing.B) {
		h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "job_echo"}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job_echo","arguments":{"text":"hello"},` + meta + `}}`
		polls := 0
		b.ReportAllocs()
		for b.Loop() {
			created := post(b, h, body)
			id, ok := jsonrpc.Unquote(jsonrpc.Member(jsonrpc.Member([]byte(created), "result"), "taskId"))
			if !ok {
				b.Fatalf("no task: %s", created)
			}
			get := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tasks/get", "Mcp-Name": id}
			for {
				polls++
				got := post(b, get, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"`+id+`",`+meta+`}}`)
				if status, _ := jsonrpc.Unquote(jsonrpc.Member(jsonrpc.Member([]byte(got), "result"), "status")); status == "completed" {
					break
				}
			}
		}
		b.ReportMetric(float64(polls)/float64(b.N), "gets/op")
	})
}
