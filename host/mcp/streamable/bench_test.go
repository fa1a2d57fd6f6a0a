package streamable

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// BenchmarkHTTPCallEcho is one tools/call at a time over Streamable HTTP on
// a loopback socket with a keep-alive connection: the POST, the session
// checks, Session.Handle, the JSON response. Client-side allocations count
// too; compare with BenchmarkCallEcho for the transport's share.
func BenchmarkHTTPCallEcho(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, mcp.NewServer(mcptest.Echo{}, nil), ln, &Options{RateLimit: -1})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	url := "http://" + ln.Addr().String() + PathMCP
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	post := func(sid, body string) (*http.Response, []byte) {
		req, _ := http.NewRequest("POST", url, bytes.NewReader([]byte(body)))
		req.Header["Content-Type"] = hdrJSON
		req.Header["Accept"] = []string{"application/json, text/event-stream"}
		if sid != "" {
			req.Header["Mcp-Session-Id"] = []string{sid}
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, out
	}
	resp, _ := post("", mcptest.InitMsg("2025-11-25"))
	sid := resp.Header.Get("Mcp-Session-Id")
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	msg := []byte(`{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)
	want := `{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"hello"}]}}`
	if _, out := post(sid, string(msg)); string(out) != want {
		b.Fatalf("response %s, want %s", out, want)
	}
	hdr := http.Header{
		"Content-Type":   hdrJSON,
		"Accept":         []string{"application/json, text/event-stream"},
		"Mcp-Session-Id": []string{sid},
	}
	buf := make([]byte, 512)
	rd := bytes.NewReader(msg)
	req, _ := http.NewRequest("POST", url, rd)
	req.Header = hdr
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(msg)
		req.Body = io.NopCloser(rd)
		req.ContentLength = int64(len(msg))
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				break
			}
		}
		resp.Body.Close()
	}
}
