package streamable

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// fakeConsole answers 200 "console PATH" and counts what reaches it.
type fakeConsole struct{ reached []string }

func (c *fakeConsole) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.reached = append(c.reached, r.URL.Path)
	io.WriteString(w, "console "+r.URL.Path)
}

// TestConsoleRoutedBeforeTheToken: the MCP listener serves Options.Console
// at /console and under it without the bearer token (a browser sends the
// console's cookie), while /mcp still wants the token; the Host guard
// (DNS rebinding) and a stricter Origin guard (the listener's own origin
// only, whatever --allowed-origin says; no CORS headers) come first, and
// a draining server answers 503; behind a proxy, the console block's
// public_url is an origin of its own too. Fails without the console route: the
// token-less GET is answered 401.
func TestConsoleRoutedBeforeTheToken(t *testing.T) {
	t.Parallel()
	cat := mcptest.NewCatalog()
	srv := mcp.NewServer(cat, &mcp.Options{Logger: hclog.NewNullLogger()})
	console := &fakeConsole{}
	h := newHTTPHandler(srv, &Options{Token: "static", AllowedOrigins: []string{"https://inspector.example"}, Console: console}, true)
	defer h.shutdown(context.Background())
	do := func(method, path, host string, hdr map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "http://"+host+path, nil)
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	const own = "127.0.0.1:8080"
	for _, c := range []struct {
		name, method, path, host string
		hdr                      map[string]string
		status                   int
		reached                  bool
	}{
		{"a page, no token", "GET", "/console/plugins", own, nil, 200, true},
		{"the root", "GET", "/console", own, nil, 200, true},
		{"a POST of its own origin", "POST", "/console/approve", own, map[string]string{"Origin": "http://" + own}, 200, true},
		{"DNS rebinding", "GET", "/console/plugins", "evil.example:8080", nil, 403, false},
		{"a foreign origin", "POST", "/console/approve", own, map[string]string{"Origin": "https://evil.example"}, 403, false},
		{"an allowed MCP origin", "POST", "/console/approve", own, map[string]string{"Origin": "https://inspector.example"}, 403, false},
		{"an opaque origin", "POST", "/console/approve", own, map[string]string{"Origin": "null"}, 403, false},
		{"its preflight", "OPTIONS", "/console/approve", own, map[string]string{"Origin": "https://inspector.example"}, 403, false},
		{"not the console", "GET", "/consoles", own, nil, 404, false},
		{"the MCP endpoint wants the token still", "POST", "/mcp", own, nil, 401, false},
	} {
		console.reached = nil
		w := do(c.method, c.path, c.host, c.hdr)
		if w.Code != c.status || (len(console.reached) > 0) != c.reached {
			t.Errorf("%s: %d %q, console reached %v; want %d, reached %v", c.name, w.Code, w.Body.String(), console.reached, c.status, c.reached)
		}
		if acao := w.Header().Get("Access-Control-Allow-Origin"); acao != "" {
			t.Errorf("%s: Access-Control-Allow-Origin %q: no other origin may read the console", c.name, acao)
		}
	}
	if w := do("POST", "/console/approve", own, map[string]string{"Origin": "https://evil.example"}); !strings.Contains(w.Body.String(), `Origin "https://evil.example" is not this console's own origin`) {
		t.Errorf("a foreign origin's refusal: %q, want it named", w.Body.String())
	}
	behind := newHTTPHandler(srv, &Options{Token: "static", Console: console, ConsoleOrigin: "https://MCP.example.com/"}, true)
	defer behind.shutdown(context.Background())
	for origin, want := range map[string]int{"https://mcp.example.com": 200, "http://127.0.0.1:8080": 200, "https://evil.example": 403} {
		r := httptest.NewRequest("POST", "http://127.0.0.1:8080/console/approve", nil)
		r.Header.Set("Origin", origin)
		w := httptest.NewRecorder()
		behind.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("behind a proxy (public_url https://mcp.example.com), Origin %s: %d, want %d", origin, w.Code, want)
		}
	}
	h.draining.Store(true)
	console.reached = nil
	if w := do("GET", "/console/plugins", own, nil); w.Code != http.StatusServiceUnavailable || len(console.reached) != 0 {
		t.Errorf("draining: %d %q, want 503 without reaching the console", w.Code, w.Body.String())
	}
}

// TestConsoleRequestsEndAsTheShutdownBegins: a console request still
// running (a page's event stream) ends when the shutdown begins, rather
// than holding the graceful shutdown for its whole grace period.
func TestConsoleRequestsEndAsTheShutdownBegins(t *testing.T) {
	t.Parallel()
	started, ended := make(chan struct{}), make(chan struct{})
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		close(ended)
	})
	g := newConsoleGate(stream, "", func() bool { return false })
	go g.serve(httptest.NewRecorder(), httptest.NewRequest("GET", "http://127.0.0.1:1/console/events", nil))
	<-started
	g.closeRequests()
	<-ended // hangs (the test times out) when the request outlives the shutdown's start
}

// TestServeConsole: --console-listen's listener serves the console alone,
// sends / there, answers 404 elsewhere, keeps the Host guard, refuses a
// listener beyond loopback, and returns when its context ends.
func TestServeConsole(t *testing.T) {
	t.Parallel()
	err := ServeConsole(t.Context(), fakeListener{addr: &net.TCPAddr{IP: net.IPv4zero, Port: 1}}, &fakeConsole{}, nil, hclog.NewNullLogger())
	if !errors.Is(err, ErrConsoleNotLoopback) || !strings.Contains(err.Error(), "0.0.0.0:1 is reachable from other machines") {
		t.Errorf("a listener on every interface: %v, want ErrConsoleNotLoopback naming it", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ServeConsole(ctx, ln, &fakeConsole{}, nil, hclog.NewNullLogger()) }()
	base := "http://" + ln.Addr().String()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		path, host string
		status     int
		body       string
	}{
		{"/console/plugins", "", 200, "console /console/plugins"},
		{"/", "", 303, ""},
		{"/mcp", "", 404, "this listener serves the console only"},
		{"/console/plugins", "evil.example", 403, "DNS rebinding"},
	} {
		r, _ := http.NewRequest("GET", base+c.path, nil)
		if c.host != "" {
			r.Host = c.host
		}
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.body) {
			t.Errorf("GET %s (Host %q): %d %q, want %d %q", c.path, c.host, resp.StatusCode, b, c.status, c.body)
		}
		if c.status == 303 && resp.Header.Get("Location") != "/console/" {
			t.Errorf("GET /: Location %q, want /console/", resp.Header.Get("Location"))
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeConsole after its context ended: %v", err)
	}
}

// fakeListener is a listener at addr that accepts nothing.
type fakeListener struct{ addr net.Addr }

func (l fakeListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (l fakeListener) Close() error              { return nil }
func (l fakeListener) Addr() net.Addr            { return l.addr }
