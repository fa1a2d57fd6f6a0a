package wrapped

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/wrapped/wire"
)

// scriptedServer answers the wrapper's requests, read from r and answered
// on w (newline-delimited JSON), as a server of resources would, sending
// first the notifications in early (before its answer to initialize, as a
// hostile or hasty server may).
func scriptedServer(r io.Reader, w io.Writer, early ...string) {
	send := func(raw string) { _, _ = io.WriteString(w, raw+"\n") }
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil || req.Method == "" {
			continue
		}
		var result string
		switch req.Method {
		case "initialize":
			for _, n := range early {
				send(n)
			}
			result = `{"protocolVersion":"2025-11-25","capabilities":{"resources":{"subscribe":true}},"serverInfo":{"name":"scripted","version":"0"}}`
		case "resources/list":
			result = `{"resources":[]}`
		case "resources/templates/list":
			result = `{"resourceTemplates":[]}`
		default:
			result = `{}`
		}
		send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`)
	}
}

// scripted runs scriptedServer and returns the bridge's dialer to it.
func scripted(t *testing.T, early ...string) dialer {
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	go scriptedServer(sr, sw, early...)
	t.Cleanup(func() { _ = sr.Close(); _ = cr.Close() })
	return func(_ context.Context, o *wire.Options) (*wire.Conn, error) { return wire.Stream(cr, cw, o) }
}

// A server's notification that arrives while the wrapper connects (a
// resources/updated before, or right after, its answer to initialize)
// must not crash the wrapper: the plugin it reaches is not made yet.
func TestWrappedEarlyNotification(t *testing.T) {
	ct := scripted(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///x"}}`)
	p, _, err := start(t.Context(), &Options{Server: &declared.Server{Type: declared.TypeHTTP, URL: "http://in-memory"}, Name: "plughost", Version: "0", Logger: hclog.NewNullLogger()}, ct)
	if err != nil {
		t.Fatal(err)
	}
	if p == nil {
		t.Fatal("no plugin")
	}
}
