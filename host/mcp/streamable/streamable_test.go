package streamable

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

func TestHTTPStatusCodes(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{AllowedOrigins: []string{"http://localhost:6274"}, MaxBodySize: 2048})
	sid := hs.initialize("2025-11-25")
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	tests := map[string]struct {
		r      req
		status int
		want   string // in the body
	}{
		"request answered as JSON":       {req{"POST", "/mcp", postHeaders(sid), ping}, 200, `{"jsonrpc":"2.0","id":7,"result":{}}`},
		"notification is 202":            {req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`}, 202, ""},
		"client response is 202":         {req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":"s1","result":{}}`}, 202, ""},
		"missing session id is 400":      {req{"POST", "/mcp", postHeaders(""), ping}, 400, "missing Mcp-Session-Id"},
		"unknown session is 404":         {req{"POST", "/mcp", postHeaders("nope"), ping}, 404, "session not found"},
		"Accept without SSE is 406":      {req{"POST", "/mcp", postHeaders(sid, "Accept", "application/json"), ping}, 406, "text/event-stream"},
		"Accept wildcard passes":         {req{"POST", "/mcp", postHeaders(sid, "Accept", "*/*"), ping}, 200, `"result":{}`},
		"not JSON content type is 415":   {req{"POST", "/mcp", postHeaders(sid, "Content-Type", "text/plain"), ping}, 415, "application/json"},
		"invalid JSON is 400 and -32700": {req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":`}, 400, "-32700"},
		"body over the limit is 413":     {req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 3000) + `"}}`}, 413, "limit of 2048 bytes"},
		"unsupported version is 400":     {req{"POST", "/mcp", postHeaders(sid, "MCP-Protocol-Version", "1999-01-01"), ping}, 400, "unsupported MCP-Protocol-Version"},
		"supported version passes":       {req{"POST", "/mcp", postHeaders(sid, "MCP-Protocol-Version", "2025-06-18"), ping}, 200, `"result":{}`},
		"GET needs the session id":       {req{"GET", "/mcp", map[string]string{"Accept": "text/event-stream"}, ""}, 400, "missing Mcp-Session-Id"},
		"GET unknown session is 404":     {req{"GET", "/mcp", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": "nope"}, ""}, 404, "session not found"},
		"GET without SSE Accept is 406":  {req{"GET", "/mcp", map[string]string{"Accept": "application/json", "Mcp-Session-Id": sid}, ""}, 406, "text/event-stream"},
		"bad Last-Event-ID is 400":       {req{"GET", "/mcp", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid, "Last-Event-ID": "99_1"}, ""}, 400, "Last-Event-ID"},
		"PUT is 405":                     {req{"PUT", "/mcp", postHeaders(sid), ping}, 405, "method not allowed"},
		"other path is 404":              {req{"POST", "/other", postHeaders(sid), ping}, 404, "/mcp"},
		"foreign Host is 403":            {req{"POST", "/mcp", postHeaders(sid, "Host", "evil.example:8080"), ping}, 403, "DNS rebinding"},
		"localhost Host passes":          {req{"POST", "/mcp", postHeaders(sid, "Host", "localhost:1"), ping}, 200, `"result":{}`},
		"foreign Origin is 403":          {req{"POST", "/mcp", postHeaders(sid, "Origin", "http://evil.example"), ping}, 403, "Origin"},
		"allowed Origin passes":          {req{"POST", "/mcp", postHeaders(sid, "Origin", "http://localhost:6274"), ping}, 200, `"result":{}`},
		"same Origin passes":             {req{"POST", "/mcp", postHeaders(sid, "Origin", hs.url), ping}, 200, `"result":{}`},
		"DELETE unknown session is 404":  {req{"DELETE", "/mcp", map[string]string{"Mcp-Session-Id": "nope"}, ""}, 404, "session not found"},
		"legacy POST unknown is 404":     {req{"POST", "/message?sessionId=nope", postHeaders(""), ping}, 404, "session not found"},
		"legacy GET without SSE is 406":  {req{"GET", "/sse", map[string]string{"Accept": "application/json"}, ""}, 406, "text/event-stream"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			status, h, body := hs.roundtrip(tc.r)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%s %s: %d %q, want %d and a body containing %q", tc.r.method, tc.r.path, status, body, tc.status, tc.want)
			}
			if body != "" && h.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q, want application/json", h.Get("Content-Type"))
			}
			if body != "" {
				if err := mcptest.CheckSchema(t, "2025-11-25", []byte(body), func(json.RawMessage) string { return "ping" }); err != nil {
					t.Errorf("body %s: %v", body, err)
				}
			}
		})
	}
}

// TestHTTPCORS: a page of an allowed origin gets its preflight answered and
// may read responses and the session id; a foreign origin gets neither.
func TestHTTPCORS(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{AllowedOrigins: []string{"http://localhost:6274"}, Token: "s3cret"})
	status, h, _ := hs.roundtrip(req{"OPTIONS", "/mcp", map[string]string{
		"Origin": "http://localhost:6274", "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "content-type, mcp-session-id, authorization"}, ""})
	if status != 204 || h.Get("Access-Control-Allow-Origin") != "http://localhost:6274" ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("preflight of an allowed origin (no token needed): %d %v", status, h)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`
	status, h, body := hs.roundtrip(req{"POST", "/mcp", postHeaders("", "Origin", "http://localhost:6274", "Authorization", "Bearer s3cret"), init})
	if status != 200 || h.Get("Access-Control-Allow-Origin") != "http://localhost:6274" ||
		!strings.Contains(h.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") || h.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize from an allowed origin: %d %v %s", status, h, body)
	}
	status, h, _ = hs.roundtrip(req{"OPTIONS", "/mcp", map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}, ""})
	if status != 403 || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight of a foreign origin: %d %v, want 403 without CORS headers", status, h)
	}
}

func TestHTTPToken(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{Token: "s3cret"})
	tests := map[string]struct {
		auth      string
		status    int
		challenge string
	}{
		"none":  {"", 401, `Bearer realm="plughost"`},
		"wrong": {"Bearer guess", 401, `Bearer realm="plughost", error="invalid_token"`},
		"basic": {"Basic czNjcmV0", 401, `Bearer realm="plughost", error="invalid_token"`},
		"right": {"Bearer s3cret", 200, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := postHeaders("")
			if tc.auth != "" {
				h["Authorization"] = tc.auth
			}
			status, hdr, body := hs.roundtrip(req{"POST", "/mcp", h, mcptest.InitMsg("2025-11-25")})
			if status != tc.status || hdr.Get("WWW-Authenticate") != tc.challenge {
				t.Errorf("%d WWW-Authenticate %q (%s), want %d %q", status, hdr.Get("WWW-Authenticate"), body, tc.status, tc.challenge)
			}
		})
	}
}

func TestHTTPRefusesExposureWithoutToken(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		addr  net.Addr
		token string
		want  error
	}{
		"loopback v4":           {&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, "", nil},
		"loopback v6":           {&net.TCPAddr{IP: net.IPv6loopback}, "", nil},
		"unix socket":           {&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, "", nil},
		"all interfaces":        {&net.TCPAddr{IP: net.IPv4zero}, "", ErrTokenRequired},
		"lan address":           {&net.TCPAddr{IP: net.IPv4(192, 168, 1, 2)}, "", ErrTokenRequired},
		"all interfaces, token": {&net.TCPAddr{IP: net.IPv4zero}, "t", nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := (&Options{Token: tc.token}).Check(tc.addr)
			if !errors.Is(err, tc.want) {
				t.Errorf("Check = %v, want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), "--token") {
				t.Errorf("the refusal does not say how to fix it: %v", err)
			}
		})
	}
	// Serve itself refuses, and closes the listener.
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := Serve(t.Context(), mcp.NewServer(mcptest.NewCatalog(), nil), ln, nil); !errors.Is(err, ErrTokenRequired) {
		t.Errorf("Serve on 0.0.0.0 without a token = %v, want ErrTokenRequired", err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Error("the listener was left open")
	}
}

// TestHTTPStreamsNotifications: a call that sends progress and logs before
// its result is answered as an event stream, in order, with event ids
// naming the stream; a call that does not is answered as JSON.
func TestHTTPStreamsNotifications(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	sid := hs.initialize("2025-11-25")
	resp := hs.do(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"chatty","arguments":{},"_meta":{"progressToken":"t"}}}`})
	defer resp.Body.Close()
	r := newSSEReader(t, resp)
	var got []string
	var ids []string
	for {
		e, ok := r.next()
		if !ok {
			break
		}
		ids = append(ids, e.id)
		var m struct {
			Method string `json:"method"`
			ID     any    `json:"id"`
		}
		if err := json.Unmarshal([]byte(e.data), &m); err != nil {
			t.Fatalf("event data %q: %v", e.data, err)
		}
		if err := mcptest.CheckSchema(t, "2025-11-25", []byte(e.data), func(json.RawMessage) string { return "tools/call" }); err != nil {
			t.Errorf("event %s: %v", e.data, err)
		}
		got = append(got, m.Method+map[bool]string{true: "response"}[m.ID != nil])
	}
	want := []string{"notifications/progress", "notifications/progress", // 1 and 2 of 3
		"notifications/message", "notifications/message", "notifications/message", // info, warning, error
		"response"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"1_1", "1_2", "1_3", "1_4", "1_5", "1_6"}, ids); diff != "" {
		t.Errorf("event ids (-want +got):\n%s", diff)
	}
	status, h, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`})
	if status != 200 || h.Get("Content-Type") != "application/json" || !strings.Contains(body, `"text":"hi"`) {
		t.Errorf("echo: %d %s %s", status, h.Get("Content-Type"), body)
	}
}

// TestHTTPBatch: a 2025-03-26 session may POST a batch.
func TestHTTPBatch(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	sid := hs.initialize("2025-03-26")
	status, _, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`})
	if status != 200 || body != `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]` {
		t.Errorf("batch: %d %s", status, body)
	}
}

// TestHTTPListChangedOnGET: list_changed reaches every session's GET stream.
func TestHTTPListChangedOnGET(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	var readers []*sseReader
	for range 2 {
		sid := hs.initialize("2025-11-25")
		resp := hs.do(req{"GET", "/mcp", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid}, ""})
		defer resp.Body.Close()
		readers = append(readers, newSSEReader(t, resp))
	}
	hs.cat.Change()
	for i, r := range readers {
		e := r.nextWithin(t, 10*time.Second)
		if e.data != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` || e.id != "0_1" {
			t.Errorf("session %d: event %+v, want list_changed with id 0_1", i, e)
		}
	}
}

// TestHTTPResume: a client that loses a POST's stream mid-call resumes it
// with GET and Last-Event-ID, and gets every event after that id — the
// ones sent while it was away and the response that comes later.
func TestHTTPResume(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	sid := hs.initialize("2025-11-25")
	resp := hs.do(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":"s"}}}`})
	first := newSSEReader(t, resp).nextWithin(t, 10*time.Second)
	if !strings.Contains(first.data, "notifications/progress") {
		t.Fatalf("first event %+v, want progress", first)
	}
	resp.Body.Close() // the connection is lost; the call goes on
	// While the client is away, the call finishes; its response is kept.
	hs.await("the call to park", func() bool { return hs.cat.LiveParked() == 1 })
	if !hs.cat.ReleaseOne() {
		t.Fatal("the slow call is not parked")
	}
	hs.await("the response to be sent", hs.settled)
	get := hs.do(req{"GET", "/mcp", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid, "Last-Event-ID": first.id}, ""})
	defer get.Body.Close()
	r := newSSEReader(t, get)
	e := r.nextWithin(t, 10*time.Second)
	if e.id != "1_2" || !strings.Contains(e.data, `"id":9`) || !strings.Contains(e.data, "slow done") {
		t.Errorf("replayed %+v, want the response with id 1_2", e)
	}
	if e, ok := r.next(); ok {
		t.Errorf("the resumed stream went on after its response: %+v", e)
	}
}

// TestHTTPResumeLive: resuming a stream whose call still runs replays what
// was missed, then carries the rest live.
func TestHTTPResumeLive(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	sid := hs.initialize("2025-11-25")
	resp := hs.do(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":"s"}}}`})
	first := newSSEReader(t, resp).nextWithin(t, 10*time.Second)
	resp.Body.Close()
	get := hs.do(req{"GET", "/mcp", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid, "Last-Event-ID": first.id}, ""})
	defer get.Body.Close()
	r := newSSEReader(t, get)
	hs.await("the call to park", func() bool { return hs.cat.LiveParked() == 1 })
	if !hs.cat.ReleaseOne() {
		t.Fatal("the slow call is not parked")
	}
	e := r.nextWithin(t, 10*time.Second)
	if e.id != "1_2" || !strings.Contains(e.data, "slow done") {
		t.Errorf("got %+v, want the response", e)
	}
	if _, ok := r.next(); ok {
		t.Error("the resumed stream did not end after its response")
	}
}

// TestHTTPDelete: DELETE ends the session, cancels its calls and frees it.
func TestHTTPDelete(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	sid := hs.initialize("2025-11-25")
	callDone := hs.callAsync(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	hs.await("the call to park", func() bool { return hs.cat.LiveParked() == 1 })
	if s, _, b := hs.roundtrip(req{"DELETE", "/mcp", map[string]string{"Mcp-Session-Id": sid}, ""}); s != 204 {
		t.Fatalf("DELETE: %d %s", s, b)
	}
	if got := <-callDone; got.status != 404 {
		t.Errorf("the call in flight got %d %s, want 404 (session ended)", got.status, got.body)
	}
	if s, _, _ := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":4,"method":"ping"}`}); s != 404 {
		t.Errorf("after DELETE: %d, want 404", s)
	}
	if n := hs.cat.Subscribers(); n != 0 {
		t.Errorf("%d catalog subscriptions left, want 0", n)
	}
}

// TestHTTPRateLimit: requests beyond the session's rate get 429, a
// JSON-RPC error with the request's id saying when to retry, and
// Retry-After; notifications pass.
func TestHTTPRateLimit(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{RateLimit: 0.5, RateBurst: 1})
	sid := hs.initialize("2025-11-25")
	if s, _, b := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":1,"method":"ping"}`}); s != 200 {
		t.Fatalf("first ping: %d %s", s, b)
	}
	status, h, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":2,"method":"ping"}`})
	var resp struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				RetryAfterMs int64 `json:"retryAfterMs"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	if status != 429 || h.Get("Retry-After") != "2" || resp.ID != 2 || resp.Error.Code != mcp.CodeRateLimited ||
		!strings.Contains(resp.Error.Message, "rate limit exceeded") || !strings.Contains(resp.Error.Message, "retry after") ||
		resp.Error.Data.RetryAfterMs <= 1000 {
		t.Errorf("second ping: %d Retry-After %q %s", status, h.Get("Retry-After"), body)
	}
	if err := mcptest.CheckSchema(t, "2025-11-25", []byte(body), nil); err != nil {
		t.Error(err)
	}
	if s, _, b := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`}); s != 202 {
		t.Errorf("a notification over the rate: %d %s, want 202", s, b)
	}
}

// TestHTTPIdleExpiry: a session idle for IdleTimeout ends and is freed.
func TestHTTPIdleExpiry(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{IdleTimeout: 100 * time.Millisecond})
	// Only initialize: the session may well expire before a second
	// request could follow on a loaded machine.
	status, h, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(""), mcptest.InitMsg("2025-11-25")})
	sid := h.Get("Mcp-Session-Id")
	if status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	hs.logs.await(t, `why="idle for 100ms"`)
	if s, _, _ := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid), `{"jsonrpc":"2.0","id":1,"method":"ping"}`}); s != 404 {
		t.Errorf("after expiry: %d, want 404", s)
	}
	if n := hs.cat.Subscribers(); n != 0 {
		t.Errorf("%d catalog subscriptions left, want 0", n)
	}
}

// TestHTTPGracefulShutdown: when ctx ends, a call in flight finishes and
// gets its response, open streams end, new connections are refused, and
// Serve returns nil.
func TestHTTPGracefulShutdown(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{ShutdownTimeout: 10 * time.Second})
	sid := hs.initialize("2025-11-25")
	get := hs.do(req{"GET", "/mcp", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid}, ""})
	defer get.Body.Close()
	stream := newSSEReader(t, get)
	call := hs.callAsync(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	hs.await("the call to park", func() bool { return hs.cat.LiveParked() == 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- hs.stop() }()
	hs.logs.await(t, "shutting down HTTP")
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) while a call was in flight", err)
	default:
	}
	hs.cat.ReleaseOne()
	if got := <-call; got.status != 200 || !strings.Contains(got.body, "slow done") {
		t.Errorf("the call in flight got %d %s, want its result", got.status, got.body)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Serve = %v", err)
	}
	if e, ok := stream.next(); ok {
		t.Errorf("the GET stream went on: %+v", e)
	}
	if _, err := http.Get(hs.url + "/mcp"); err == nil {
		t.Error("the server still accepts connections")
	}
}

// TestHTTPShutdownGrace: a call still running after ShutdownTimeout is
// cancelled.
func TestHTTPShutdownGrace(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{ShutdownTimeout: 50 * time.Millisecond})
	sid := hs.initialize("2025-11-25")
	call := hs.callAsync(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	hs.await("the call to park", func() bool { return hs.cat.LiveParked() == 1 })
	if err := hs.stop(); err != nil {
		t.Errorf("Serve = %v", err)
	}
	if got := <-call; got.status != 404 {
		t.Errorf("the cancelled call got %d %s, want 404 (session ended)", got.status, got.body)
	}
}

// TestHTTPPriming: from 2025-11-25 every SSE stream opens with a priming
// event (an id, empty data, a retry delay), whose id resumes the stream
// from its start; older sessions get none.
func TestHTTPPriming(t *testing.T) {
	t.Parallel()
	slowCall := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":"s"}}}`
	tests := map[string]struct {
		version string
		get     bool // open the GET stream instead of a POST's
		want    sseEvent
	}{
		"POST stream":            {version: "2025-11-25", want: sseEvent{id: "1_0", retry: "1000"}},
		"GET stream":             {version: "2025-11-25", get: true, want: sseEvent{id: "0_0", retry: "1000"}},
		"POST stream 2025-06-18": {version: "2025-06-18", want: sseEvent{id: "1_1", name: "message"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hs := startHTTP(t, nil)
			sid := hs.initialize(tt.version)
			var resp *http.Response
			if tt.get {
				resp = hs.do(req{"GET", "/mcp", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid}, ""})
			} else {
				resp = hs.do(req{"POST", "/mcp", postHeaders(sid, "Mcp-Protocol-Version", tt.version), slowCall})
			}
			defer resp.Body.Close()
			r := newSSEReader(t, resp)
			r.raw = true
			got := r.nextWithin(t, 10*time.Second)
			got.data = "" // the 2025-06-18 stream starts with the progress
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(sseEvent{})); diff != "" {
				t.Errorf("first event (-want +got):\n%s", diff)
			}
		})
	}

	// The priming id resumes the stream from its start: a client that
	// loses the POST's stream right after the priming misses nothing.
	t.Run("resume from the priming id", func(t *testing.T) {
		t.Parallel()
		hs := startHTTP(t, nil)
		sid := hs.initialize("2025-11-25")
		resp := hs.do(req{"POST", "/mcp", postHeaders(sid), slowCall})
		r := newSSEReader(t, resp)
		r.raw = true
		prime := r.nextWithin(t, 10*time.Second)
		resp.Body.Close()
		hs.await("the call to park", func() bool { return hs.cat.LiveParked() == 1 })
		if !hs.cat.ReleaseOne() {
			t.Fatal("the slow call is not parked")
		}
		hs.await("the response to be sent", hs.settled)
		get := hs.do(req{"GET", "/mcp", map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid, "Last-Event-ID": prime.id}, ""})
		defer get.Body.Close()
		g := newSSEReader(t, get)
		var ids []string
		for {
			e, ok := g.next()
			if !ok {
				break
			}
			ids = append(ids, e.id)
		}
		if diff := cmp.Diff([]string{"1_1", "1_2"}, ids); diff != "" {
			t.Errorf("resumed from %s (-want +got):\n%s", prime.id, diff)
		}
	})
}

// TestHTTPTooManyInFlight: a session's POSTed calls beyond 4×MaxInFlight
// waiting or running are refused with 429 instead of piling up, as stdio
// stops reading; the admitted ones finish normally.
func TestHTTPTooManyInFlight(t *testing.T) {
	t.Parallel()
	hs := startHTTPInFlight(t, &Options{RateLimit: -1}, 1) // at most 4 pending
	sid := hs.initialize("2025-11-25")
	var calls []<-chan result
	for i := range 12 {
		calls = append(calls, hs.callAsync(sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow"}}`, i+1)))
	}
	// Nothing finishes until a parked call is released, so exactly 4 are
	// admitted and 8 refused.
	results := make(chan result, len(calls))
	for _, c := range calls {
		go func() { results <- <-c }()
	}
	for range 8 {
		r := <-results
		if r.status != 429 || !strings.Contains(r.body, "too many requests in flight") {
			t.Fatalf("a call over the bound: %d %s, want 429", r.status, r.body)
		}
	}
	for range 4 {
		hs.await("a parked call to release", hs.cat.ReleaseOne)
		r := <-results
		if r.status != 200 || !strings.Contains(r.body, "slow done") {
			t.Errorf("an admitted call: %d %s, want 200 slow done", r.status, r.body)
		}
	}
}
