package streamable

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

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
	return startHTTPWith(t, opts, mcp.Options{MaxInFlight: maxInFlight})
}

// startHTTPWith is startHTTP with the MCP server's options (its Version,
// Logger and OnSession are the harness's).
func startHTTPWith(t *testing.T, opts *Options, mopts mcp.Options) *httpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &httpServer{t: t, url: "http://" + ln.Addr().String(), cat: mcptest.NewCatalog(),
		logs: &logLines{changed: make(chan struct{})}, events: make(chan struct{}, 1)}
	hs.cat.OnChange = hs.poke
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: hs.logs})
	mopts.Version, mopts.Logger = "1.0.0", logger
	mopts.OnSession = func(s *mcp.Session) func() {
		hs.mu.Lock()
		hs.sessions = append(hs.sessions, s)
		hs.mu.Unlock()
		return hs.poke
	}
	srv := mcp.NewServer(hs.cat, &mopts)
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
