package streamable

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// TestMain fails the run if any goroutine of this package or the protocol's
// outlives the tests.
func TestMain(m *testing.M) {
	os.Exit(mcptest.RunCheckingLeaks(m, "plughost/host/mcp.", "plughost/host/mcp/streamable."))
}

// httpServer is Serve on a real loopback socket, serving a
// fakeCatalog, and a raw net/http client for it.
type httpServer struct {
	t    *testing.T
	srv  *mcp.Server
	url  string // http://127.0.0.1:PORT
	cat  *mcptest.Catalog
	logs *logLines
	stop func() error // cancels ctx and returns what Serve returned

	events   chan struct{} // poked when a call parks or a session's work drains
	mu       sync.Mutex
	sessions []*mcp.Session
}

func startHTTP(t *testing.T, opts *Options) *httpServer {
	t.Helper()
	return startHTTPInFlight(t, opts, 0)
}

// startHTTPInFlight is startHTTP with the server's MaxInFlight.
func startHTTPInFlight(t *testing.T, opts *Options, maxInFlight int) *httpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &httpServer{t: t, url: "http://" + ln.Addr().String(), cat: mcptest.NewCatalog(),
		logs: &logLines{changed: make(chan struct{})}, events: make(chan struct{}, 1)}
	hs.cat.OnChange = hs.poke
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: hs.logs})
	srv := mcp.NewServer(hs.cat, &mcp.Options{Version: "1.0.0", Logger: logger, MaxInFlight: maxInFlight,
		OnSession: func(s *mcp.Session) func() {
			hs.mu.Lock()
			hs.sessions = append(hs.sessions, s)
			hs.mu.Unlock()
			return hs.poke
		}})
	hs.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, ln, opts) }()
	var once sync.Once
	var result error
	hs.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Serve did not return within 20s of ctx ending")
			}
		})
		return result
	}
	t.Cleanup(func() {
		if err := hs.stop(); err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
	return hs
}

func (hs *httpServer) poke() {
	select {
	case hs.events <- struct{}{}:
	default:
	}
}

// await waits until cond holds, re-checking it on every event.
func (hs *httpServer) await(what string, cond func() bool) {
	hs.t.Helper()
	timeout := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-hs.events:
		case <-timeout:
			hs.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// settled reports whether every session has written all its output, but
// for calls parked in the slow tool.
func (hs *httpServer) settled() bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var pending int64
	for _, s := range hs.sessions {
		pending += s.Pending()
	}
	return pending == hs.cat.LiveParked()
}

// logLines collects the server's logs and lets a test await a line.
type logLines struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{}
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *logLines) await(t *testing.T, substr string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		found, ch := strings.Contains(l.b.String(), substr), l.changed
		l.mu.Unlock()
		if found {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("the server never logged %q", substr)
		}
	}
}

// req is one raw HTTP request.
type req struct {
	method, path string
	header       map[string]string
	body         string
}

// postHeaders are what a well-behaved client sends with a POST.
func postHeaders(sid string, more ...string) map[string]string {
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if sid != "" {
		h["Mcp-Session-Id"] = sid
	}
	for i := 0; i+1 < len(more); i += 2 {
		h[more[i]] = more[i+1]
	}
	return h
}

func (hs *httpServer) do(r req) *http.Response {
	hs.t.Helper()
	hr, err := http.NewRequest(r.method, hs.url+r.path, strings.NewReader(r.body))
	if err != nil {
		hs.t.Fatal(err)
	}
	for k, v := range r.header {
		if k == "Host" {
			hr.Host = v
			continue
		}
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		hs.t.Fatal(err)
	}
	return resp
}

// roundtrip does r and returns the status, the headers and the whole body.
func (hs *httpServer) roundtrip(r req) (int, http.Header, string) {
	hs.t.Helper()
	resp := hs.do(r)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		hs.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// callAsync POSTs body in the background (tests must not Fatal off their
// goroutine); the result arrives on the returned channel, status -1 and the
// error text in body when the request failed.
func (hs *httpServer) callAsync(sid, body string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		hr, _ := http.NewRequest("POST", hs.url+"/mcp", strings.NewReader(body))
		for k, v := range postHeaders(sid) {
			hr.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			ch <- result{-1, err.Error()}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			ch <- result{-1, err.Error()}
			return
		}
		ch <- result{resp.StatusCode, string(b)}
	}()
	return ch
}

type result struct {
	status int
	body   string
}

// initialize opens a session of version and returns its id.
func (hs *httpServer) initialize(version string) string {
	hs.t.Helper()
	status, h, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(""), mcptest.InitMsg(version)})
	if status != 200 || h.Get("Mcp-Session-Id") == "" {
		hs.t.Fatalf("initialize: %d %s (session id %q)", status, body, h.Get("Mcp-Session-Id"))
	}
	if err := mcptest.CheckSchema(hs.t, version, []byte(body), func(json.RawMessage) string { return "initialize" }); err != nil {
		hs.t.Errorf("initialize result: %v", err)
	}
	if s, _, b := hs.roundtrip(req{"POST", "/mcp", postHeaders(h.Get("Mcp-Session-Id")), `{"jsonrpc":"2.0","method":"notifications/initialized"}`}); s != 202 {
		hs.t.Fatalf("notifications/initialized: %d %s", s, b)
	}
	return h.Get("Mcp-Session-Id")
}

// sseReader reads the events of one SSE response.
type sseReader struct {
	resp *http.Response
	sc   *bufio.Scanner
	// primes are the priming events (an id, empty data) next skipped.
	primes []sseEvent
	// raw makes next return priming events too.
	raw bool
}

type sseEvent struct{ id, name, data, retry string }

func newSSEReader(t *testing.T, resp *http.Response) *sseReader {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("want a 200 event stream, got %d %s: %s", resp.StatusCode, ct, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 8<<20)
	return &sseReader{resp: resp, sc: sc}
}

// next returns the next event, skipping comments and keeping priming
// events aside in r.primes; ok is false at the end.
func (r *sseReader) next() (e sseEvent, ok bool) {
	seen := false
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "" && seen && e.data == "" && e.id != "" && !r.raw:
			r.primes = append(r.primes, e)
			e, seen = sseEvent{}, false
		case line == "" && seen:
			return e, true
		case strings.HasPrefix(line, "retry: "):
			e.retry, seen = line[7:], true
		case strings.HasPrefix(line, ":") || line == "":
		case strings.HasPrefix(line, "id: "):
			e.id, seen = line[4:], true
		case strings.HasPrefix(line, "event: "):
			e.name, seen = line[7:], true
		case strings.HasPrefix(line, "data: "), line == "data:":
			e.data, seen = e.data+strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "), true
		}
	}
	return e, false
}

// nextWithin is next with a deadline.
func (r *sseReader) nextWithin(t *testing.T, d time.Duration) sseEvent {
	t.Helper()
	type res struct {
		e  sseEvent
		ok bool
	}
	ch := make(chan res, 1)
	go func() { e, ok := r.next(); ch <- res{e, ok} }()
	select {
	case got := <-ch:
		if !got.ok {
			t.Fatalf("the stream ended (%v)", r.sc.Err())
		}
		return got.e
	case <-time.After(d):
		r.resp.Body.Close() // unblocks the reader
		<-ch
		t.Fatalf("no event within %v", d)
	}
	return sseEvent{}
}

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
	if status != 429 || h.Get("Retry-After") != "2" || resp.ID != 2 || resp.Error.Code != codeRateLimited ||
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
	sid := hs.initialize("2025-11-25")
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
