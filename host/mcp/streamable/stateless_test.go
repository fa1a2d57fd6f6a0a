package streamable

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/mcp"
)

// meta is a 2026-07-28 request's _meta declaring caps.
func meta(caps string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// statelessPost is a 2026-07-28 POST: no session, the revision's headers.
func statelessPost(method, name, body string, more ...string) req {
	h := postHeaders("", append([]string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", method}, more...)...)
	if name != "" {
		h["Mcp-Name"] = name
	}
	return req{method: "POST", path: PathMCP, header: h, body: body}
}

// rpcError is a JSON-RPC error response's parts.
type rpcError struct {
	ID    json.RawMessage `json:"id"`
	Error struct {
		Code int             `json:"code"`
		Data json.RawMessage `json:"data"`
	} `json:"error"`
}

// TestStatelessHTTP serves MCP 2026-07-28 on /mcp without a session: the
// answer's HTTP status and JSON-RPC code for each thing the revision
// prescribes, in the order it checks them, and results carrying resultType.
func TestStatelessHTTP(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta(`{}`) + `}}`
	tests := map[string]struct {
		r      req
		status int
		code   int    // 0: a result
		inBody string // the body holds it
	}{
		"a call": {statelessPost("tools/call", "echo", call), 200, 0, `"resultType":"complete"`},
		"a list with caching hints": {statelessPost("tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta(`{}`)+`}}`),
			200, 0, `"ttlMs":500,"cacheScope":"public"`},
		"discover": {statelessPost("server/discover", "", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta(`{}`)+`}}`),
			200, 0, `"supportedVersions":["2026-07-28"`},
		"no _meta": {statelessPost("tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`),
			400, -32602, `needs _meta`},
		"no Mcp-Method":    {req{"POST", PathMCP, postHeaders("", "Mcp-Protocol-Version", "2026-07-28"), call}, 400, mcp.CodeHeaderMismatch, "Mcp-Method"},
		"Mcp-Name differs": {statelessPost("tools/call", "other", call), 400, mcp.CodeHeaderMismatch, "Mcp-Name"},
		"header and _meta versions differ": {statelessPost("tools/list", "",
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`),
			400, mcp.CodeHeaderMismatch, "MCP-Protocol-Version"},
		"an unsupported version": {req{"POST", PathMCP, postHeaders("", "Mcp-Protocol-Version", "2099-01-01", "Mcp-Method", "tools/list"),
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`},
			400, mcp.CodeUnsupportedVersion, `"requested":"2099-01-01"`},
		"no MCP-Protocol-Version header": {req{"POST", PathMCP, postHeaders("", "Mcp-Method", "tools/call", "Mcp-Name", "echo"), call},
			400, mcp.CodeHeaderMismatch, "MCP-Protocol-Version"},
		"initialize, removed": {statelessPost("initialize", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{`+meta(`{}`)+`}}`),
			404, -32601, "not in protocol version 2026-07-28"},
		"an unknown method": {statelessPost("no/such", "", `{"jsonrpc":"2.0","id":1,"method":"no/such","params":{`+meta(`{}`)+`}}`),
			404, -32601, "no/such"},
		"a batch": {statelessPost("tools/list", "", `[`+call+`]`), 400, -32600, "batches"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			status, hdr, body := hs.roundtrip(tc.r)
			if status != tc.status || !strings.Contains(body, tc.inBody) {
				t.Fatalf("got %d %s, want %d and a body holding %q", status, body, tc.status, tc.inBody)
			}
			if hdr.Get("Mcp-Session-Id") != "" {
				t.Errorf("a stateless answer opened a session %q", hdr.Get("Mcp-Session-Id"))
			}
			if tc.code == 0 {
				return
			}
			var e rpcError
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != tc.code {
				t.Fatalf("body %s: want error %d", body, tc.code)
			}
			if tc.status != 400 || tc.code != -32600 { // a batch has no one id to echo
				if string(e.ID) != "1" && string(e.ID) != "7" {
					t.Errorf("error id %s, want the request's", e.ID)
				}
			}
		})
	}
}

// TestStatelessProgressStreams: a stateless call with a progressToken is
// answered on an SSE stream (no event ids: no session to resume), the
// progress before the result.
func TestStatelessProgressStreams(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"chatty","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}}}`
	resp := hs.do(statelessPost("tools/call", "chatty", body))
	defer resp.Body.Close()
	sr := newSSEReader(t, resp)
	var msgs []string
	for {
		e, ok := sr.next()
		if !ok {
			break
		}
		if e.id != "" {
			t.Errorf("event with id %q on a stateless stream", e.id)
		}
		msgs = append(msgs, e.data)
	}
	if len(msgs) < 2 || !strings.Contains(msgs[0], "notifications/progress") || !strings.Contains(msgs[len(msgs)-1], `"resultType":"complete"`) {
		t.Fatalf("stream %q: want progress, then the result", msgs)
	}
	for _, m := range msgs {
		if strings.Contains(m, "notifications/message") {
			t.Errorf("a log without _meta's logLevel: %s", m)
		}
	}
}

// TestListenEndsOnShutdown: a subscriptions/listen stream is acknowledged at
// once, carries a list_changed tagged with its id, and on shutdown gets its
// result (a clean end) and closes; Serve returns promptly.
func TestListenEndsOnShutdown(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	body := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta(`{}`) + `}}`
	resp := hs.do(statelessPost("subscriptions/listen", "", body))
	defer resp.Body.Close()
	sr := newSSEReader(t, resp)
	if e := sr.nextWithin(t, 10e9); !strings.Contains(e.data, `"notifications/subscriptions/acknowledged"`) ||
		!strings.Contains(e.data, `"io.modelcontextprotocol/subscriptionId":"L"`) {
		t.Fatalf("first event %s: want the acknowledgement with the subscription id", e.data)
	}
	hs.cat.Change()
	if e := sr.nextWithin(t, 10e9); e.data != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}` {
		t.Fatalf("event %s: want tools/list_changed tagged with the listen's id", e.data)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- hs.stop() }()
	if e := sr.nextWithin(t, 10e9); e.data != `{"jsonrpc":"2.0","id":"L","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}` {
		t.Fatalf("event %s: want the listen's result", e.data)
	}
	if _, ok := sr.next(); ok {
		t.Error("the stream went on after the result")
	}
	if err := <-stopped; err != nil {
		t.Errorf("Serve = %v", err)
	}
}

// TestStatelessBeside2025Session: a session's requests on the same
// endpoint are served as before, the stateless ones without touching it.
func TestStatelessBeside2025Session(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	sid := hs.initialize("2025-11-25")
	status, _, body := hs.roundtrip(req{"POST", PathMCP, postHeaders(sid, "Mcp-Protocol-Version", "2025-11-25"),
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"old"}}}`})
	if status != 200 || body != `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"old"}]}}` {
		t.Fatalf("a session's call: %d %s", status, body)
	}
	status, _, body = hs.roundtrip(statelessPost("tools/call", "echo",
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"new"},`+meta(`{}`)+`}}`))
	if status != 200 || body != `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","content":[{"type":"text","text":"new"}]}}` {
		t.Fatalf("a stateless call: %d %s", status, body)
	}
	// A 2025 client that sends no MCP-Protocol-Version and no _meta still
	// needs its session.
	status, _, _ = hs.roundtrip(req{"POST", PathMCP, postHeaders(""), `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`})
	if status != http.StatusBadRequest {
		t.Errorf("a sessionless request of neither revision: %d, want 400 (missing session)", status)
	}
}

// TestStatelessLimit: beyond MaxStatelessRequests at once, 503 with
// Retry-After naming the limit.
func TestStatelessLimit(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{MaxStatelessRequests: 1})
	body := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta(`{}`) + `}}`
	resp := hs.do(statelessPost("subscriptions/listen", "", body))
	defer resp.Body.Close()
	sr := newSSEReader(t, resp)
	sr.nextWithin(t, 10e9) // acknowledged: the one slot is held
	status, hdr, out := hs.roundtrip(statelessPost("tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta(`{}`)+`}}`))
	if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.Contains(out, "1 stateless requests") {
		t.Fatalf("over the limit: %d %v %s", status, hdr, out)
	}
}

// TestStatelessInsideASessionPost: a stateless body sent with a session's
// Mcp-Session-Id is served as a stateless request, with its revision's
// header checks, not on the session.
func TestStatelessInsideASessionPost(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	sid := hs.initialize("2025-11-25")
	r := statelessPost("tools/call", "other",
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},`+meta(`{}`)+`}}`)
	r.header["Mcp-Session-Id"] = sid
	status, _, body := hs.roundtrip(r)
	if status != 400 || !strings.Contains(body, `"code":-32020`) || !strings.Contains(body, `"id":5`) {
		t.Fatalf("a stateless body with a session id and a wrong Mcp-Name: %d %s, want 400 -32020", status, body)
	}
}

// TestCORSPreflightAllowsRoutingHeaders: a browser page of an allowed
// origin may send the 2026-07-28 headers, Mcp-Param-* included.
func TestCORSPreflightAllowsRoutingHeaders(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{AllowedOrigins: []string{"http://app.example"}})
	status, hdr, _ := hs.roundtrip(req{"OPTIONS", PathMCP, map[string]string{"Origin": "http://app.example",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "mcp-method, mcp-name, mcp-param-region, x-evil"}, ""})
	allowed := hdr.Get("Access-Control-Allow-Headers")
	if status != http.StatusNoContent {
		t.Fatalf("preflight: %d", status)
	}
	for _, want := range []string{"Mcp-Method", "Mcp-Name", "mcp-param-region"} {
		if !strings.Contains(allowed, want) {
			t.Errorf("Access-Control-Allow-Headers %q lacks %s", allowed, want)
		}
	}
	if strings.Contains(allowed, "x-evil") {
		t.Errorf("Access-Control-Allow-Headers %q allows a header it does not know", allowed)
	}
}
