package wrapped

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/declared"
)

// scriptedServer answers the wrapper's requests on conn as a server of
// resources would, sending first the notifications in early (before its
// answer to initialize, as a hostile or hasty server may).
func scriptedServer(t *testing.T, conn mcp.Connection, early ...string) {
	ctx := context.Background()
	send := func(raw string) {
		msg, err := jsonrpc.DecodeMessage([]byte(raw))
		if err != nil {
			panic(err)
		}
		if conn.Write(ctx, msg) != nil {
			return
		}
	}
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue
		}
		id, _ := json.Marshal(req.ID.Raw())
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
		send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`)
	}
}

// A server's notification that arrives while the wrapper connects (a
// resources/updated before, or right after, its answer to initialize)
// must not crash the wrapper: the plugin it reaches is not made yet.
func TestWrappedEarlyNotification(t *testing.T) {
	st, ct := mcp.NewInMemoryTransports()
	conn, err := st.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	go scriptedServer(t, conn, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///x"}}`)
	p, _, err := start(t.Context(), &Options{Server: &declared.Server{Type: declared.TypeHTTP, URL: "http://in-memory"}, Name: "plughost", Version: "0", Logger: hclog.NewNullLogger()}, ct)
	if err != nil {
		t.Fatal(err)
	}
	if p == nil {
		t.Fatal("no plugin")
	}
}
