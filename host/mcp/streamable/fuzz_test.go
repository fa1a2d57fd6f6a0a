package streamable

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// fuzzPaths are the paths FuzzHTTPHandler's requests go to, by index.
var fuzzPaths = []string{PathMCP, PathSSE, PathMessage, PathHealthz, PathReadyz, "/", "/mcp/", "/message?sessionId="}

// FuzzHTTPHandler sends one fuzzed request (method, path, headers, body)
// to a handler holding one initialized session, whose id the request
// carries unless its headers name another. Whatever the request, the
// handler does not panic; it answers with a valid status, an error status
// with a JSON-RPC error as body (but at the health probes' paths, which
// answer in plain text); and once the handler is shut down, no
// goroutine it started is left. A request whose answer is a stream is
// cut off (its context cancelled) when the stream's first bytes are
// flushed. Headers are "Name: value" lines; the corpus the fuzzer kept
// (testdata/fuzz/FuzzHTTPHandler) replays in every `go test`.
func FuzzHTTPHandler(f *testing.F) {
	const (
		accept = "Accept: application/json, text/event-stream\nContent-Type: application/json\n"
		v      = "MCP-Protocol-Version: 2025-11-25\n"
	)
	for _, seed := range []struct {
		method  string
		path    uint8
		headers string
		body    string
	}{
		{"POST", 0, accept + v, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}`},
		{"POST", 0, accept + v, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chatty","_meta":{"progressToken":1}}}`},
		{"POST", 0, accept + "MCP-Protocol-Version: 1999-01-01\n", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"POST", 0, accept + "Mcp-Session-Id: nope\n", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"POST", 0, accept + "Origin: http://evil.example\n", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`},
		{"POST", 0, "Accept: text/html\nContent-Type: text/plain\n", `{`},
		{"POST", 0, accept + "Mcp-Method: tools/call\nMcp-Name: other\n" + v, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`},
		{"POST", 0, accept + v, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		{"GET", 0, "Accept: text/event-stream\n" + v + "Last-Event-ID: 1_0\n", ``},
		{"GET", 0, "Accept: text/event-stream\n" + v, ``},
		{"DELETE", 0, v, ``},
		{"OPTIONS", 0, "Origin: http://localhost:3000\nAccess-Control-Request-Headers: mcp-param-region\n", ``},
		{"GET", 1, "Accept: text/event-stream\n", ``},
		{"POST", 7, "Content-Type: application/json\n", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"GET", 3, "Host: evil.example\n", ``},
		{"PUT", 6, "Authorization: Bearer x\n", "\x00"},
	} {
		f.Add(seed.method, seed.path, seed.headers, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, method string, path uint8, headers string, body []byte) {
		before := runtime.NumGoroutine()
		cat := mcptest.NewCatalog()
		cat.NoPark = true
		srv := mcp.NewServer(cat, &mcp.Options{Logger: hclog.NewNullLogger()})
		h := newHTTPHandler(srv, &Options{RateLimit: -1}, true)
		id := fuzzInitialize(t, h)
		r, err := http.NewRequest(method, "http://127.0.0.1:1"+fuzzPaths[int(path)%len(fuzzPaths)], bytes.NewReader(body))
		if err != nil {
			h.shutdown(context.Background())
			return // no client can send it: net/http refuses the method or the URL
		}
		r.Header.Set("Mcp-Session-Id", id)
		for line := range strings.Lines(headers) {
			if name, value, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":"); ok {
				if strings.EqualFold(strings.TrimSpace(name), "Host") {
					r.Host = strings.TrimSpace(value)
				} else {
					r.Header[http.CanonicalHeaderKey(strings.TrimSpace(name))] = []string{strings.TrimSpace(value)}
				}
			}
		}
		w := serveCut(h, r)
		h.shutdown(context.Background())
		if w.status < 100 || w.status > 599 {
			t.Fatalf("status %d", w.status)
		}
		if w.status >= 400 && !isHealthPath(r.URL.Path) { // probes get plain text
			var e struct {
				JSONRPC string `json:"jsonrpc"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(w.body.Bytes(), &e); err != nil || e.JSONRPC != "2.0" || e.Error == nil || e.Error.Message == "" {
				t.Fatalf("status %d with body %q: not a JSON-RPC error (%v)", w.status, w.body.Bytes(), err)
			}
		}
		if n := awaitGoroutines(before); n > before {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before the request, %d after the shutdown:\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
	})
}

// fuzzInitialize opens a session in h and returns its id.
func fuzzInitialize(t *testing.T, h *httpHandler) string {
	r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", strings.NewReader(mcptest.InitMsg("2025-11-25")))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Content-Type", "application/json")
	w := serveCut(h, r)
	id := w.header.Get("Mcp-Session-Id")
	if w.status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", w.status, w.body.Bytes())
	}
	return id
}

// serveCut serves r and returns the answer, cutting a stream off at its
// first flush (when the handler has answered all it will at once).
func serveCut(h http.Handler, r *http.Request) *cutWriter {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	w := &cutWriter{header: http.Header{}, flushed: cancel}
	h.ServeHTTP(w, r.WithContext(ctx))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w
}

// cutWriter is an http.ResponseWriter that records the answer and calls
// flushed at every flush. It has no write deadlines (as
// httptest.ResponseRecorder has none).
type cutWriter struct {
	mu      sync.Mutex
	header  http.Header
	status  int
	body    bytes.Buffer
	flushed func()
}

func (w *cutWriter) Header() http.Header { return w.header }

func (w *cutWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = status
	}
}

func (w *cutWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(p)
}

func (w *cutWriter) Flush() { w.flushed() }

// awaitGoroutines returns the number of goroutines once it is at most
// want, or after 5 seconds. It polls: no event announces a goroutine's end.
func awaitGoroutines(want int) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(time.Millisecond)
	}
}
