package wire_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/wrapped/wire"
)

// The peers of these tests are servers we did not write: the go-sdk's
// server (over pipes, Streamable HTTP and the old SSE transport) and
// server-everything on Node 22.

const initParams = `{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"test","version":"0"}}`

// handshake initializes c as a client does.
func handshake(t *testing.T, c *wire.Conn) {
	t.Helper()
	raw, err := c.Call(t.Context(), "initialize", json.RawMessage(initParams))
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	var res struct{ ProtocolVersion string }
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	c.Initialized(res.ProtocolVersion)
	if err := c.Notify(t.Context(), "notifications/initialized", nil); err != nil {
		t.Fatal(err)
	}
}

// pipeTo serves srv over two pipes and connects to it.
func pipeTo(t *testing.T, srv *mcp.Server, o *wire.Options) *wire.Conn {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ss, err := srv.Connect(t.Context(), &mcp.IOTransport{Reader: sr, Writer: sw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := wire.Stream(cr, cw, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(); _ = ss.Close(); _ = cr.Close() })
	return c
}

// blocking is a server whose tool "wait" tells started, then returns once
// its request is cancelled, telling cancelled; "echo" answers at once.
func blocking(started, cancelled chan<- struct{}) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "blocking", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	})
	return srv
}

// A call whose context ends tells the server (notifications/cancelled),
// which stops working on it; calls at once are each answered with their
// own result (the writes batched, the ids matched).
func TestCancellationAndConcurrentCalls(t *testing.T) {
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	c := pipeTo(t, blocking(started, cancelled), nil)
	handshake(t, c)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "tools/call", json.RawMessage(`{"name":"wait","arguments":{}}`))
		done <- err
	}()
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			raw, err := c.Call(t.Context(), "tools/call", json.RawMessage(fmt.Sprintf(`{"name":"echo","arguments":{"n":%d}}`, i)))
			if err != nil || !strings.Contains(string(raw), fmt.Sprintf(`{\"n\":%d}`, i)) {
				t.Errorf("call %d = %s, %v", i, raw, err)
			}
		})
	}
	wg.Wait()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled call = %v, want context.Canceled", err)
	}
	<-cancelled // the server's handler saw its request cancelled
}

// At most MaxInFlight calls wait at once; the next is refused, naming the
// bound, and the connection goes on.
func TestCallsInFlightBounded(t *testing.T) {
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	c := pipeTo(t, blocking(started, cancelled), &wire.Options{MaxInFlight: 1})
	handshake(t, c)
	ctx, cancel := context.WithCancel(t.Context())
	waiting := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "tools/call", json.RawMessage(`{"name":"wait","arguments":{}}`))
		waiting <- err
	}()
	<-started
	_, err := c.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"echo","arguments":{}}`))
	if err == nil || !strings.Contains(err.Error(), "over 1 requests to the server in flight at once") {
		t.Fatalf("the call over the bound: %v", err)
	}
	cancel()
	<-waiting
	<-cancelled
	if _, err := c.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"echo","arguments":{}}`)); err != nil {
		t.Errorf("a call once the bound is free: %v", err)
	}
}

// A stdio server that sends a line over MaxMessage ends the connection
// with an error naming the limit (the line cannot be attributed to a
// call): its calls fail, the client's memory does not grow with it.
func TestStdioMessageBounded(t *testing.T) {
	sh := `read -r line; head -c 300000 /dev/zero | tr '\0' a; echo; sleep 60`
	c, err := wire.Stdio(exec.Command("/bin/sh", "-c", sh), 0, &wire.Options{MaxMessage: 100000})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Call(t.Context(), "initialize", json.RawMessage(initParams))
	want := "the server sent a message over 100000 bytes, the limit of a wrapped server's message"
	if err == nil || err.Error() != want {
		t.Fatalf("Call = %v, want %q", err, want)
	}
	<-c.Done()
}

// A stdio server that exits ends the connection with its exit status.
func TestStdioServerExit(t *testing.T) {
	c, err := wire.Stdio(exec.Command("/bin/sh", "-c", "read -r line; exit 3"), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Call(t.Context(), "initialize", json.RawMessage(initParams))
	var ee *wire.ExitError
	if !errors.As(err, &ee) || ee.State.ExitCode() != 3 {
		t.Fatalf("Call = %v, want the server's exit status 3", err)
	}
	<-c.Done()
	if !errors.As(c.Err(), &ee) {
		t.Errorf("Err = %v, want an *ExitError", c.Err())
	}
}

// Against server-everything (Node) on stdio: a call's progress reaches
// Notify before its result, and the server's own request (roots/list,
// which it asks once initialized) reaches Request and is answered.
func TestStdioEverythingServer(t *testing.T) {
	node, err := filepath.EvalSymlinks("../../../conformance/node_modules/.bin/node")
	if err != nil {
		t.Fatalf("%v (npm ci in conformance/ installs Node 22 and the reference servers)", err)
	}
	script, _ := filepath.Abs("../../../conformance/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	var mu sync.Mutex
	var progress []string
	asked := make(chan string, 4)
	c, err := wire.Stdio(exec.Command(node, script, "stdio"), 0, &wire.Options{
		Notify: func(method string, params json.RawMessage) {
			if method == "notifications/progress" {
				mu.Lock()
				progress = append(progress, string(params))
				mu.Unlock()
			}
		},
		Request: func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
			asked <- method
			return json.RawMessage(`{"roots":[]}`), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	handshake(t, c)
	if m := <-asked; m != "roots/list" {
		t.Errorf("the server asked %s, want roots/list", m)
	}
	raw, err := c.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"trigger-long-running-operation","arguments":{"duration":0.3,"steps":3},"_meta":{"progressToken":"p1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := len(progress)
	mu.Unlock()
	if got != 3 || !strings.Contains(progress[0], `"progressToken":"p1"`) {
		t.Errorf("progress before the result %s: %q, want 3 notifications of p1", raw, progress)
	}
	if raw, err := c.Call(t.Context(), "ping", nil); err != nil || string(raw) != "{}" {
		t.Errorf("ping = %s, %v", raw, err)
	}
}

// recorder records the method and session headers of each HTTP request.
type recorder struct {
	mu   sync.Mutex
	reqs []string
}

func (r *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.reqs = append(r.reqs, fmt.Sprintf("%s session=%t version=%s", req.Method, req.Header.Get("Mcp-Session-Id") != "", req.Header.Get("MCP-Protocol-Version")))
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
}

func (r *recorder) saw(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.reqs {
		if q == s {
			return true
		}
	}
	return false
}

// Over Streamable HTTP: the session id and protocol version go with every
// request after initialize, what the server sends outside a request
// arrives on the GET stream (a list_changed), a server's request in the
// middle of a call is answered (roots/list), and Close deletes the
// session.
func TestStreamable(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "roots", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Roots[0].URI}}}, nil
	})
	var rec recorder
	hs := httptest.NewServer(rec.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	changed := make(chan string, 4)
	c, err := wire.Streamable(hs.URL, hs.Client(), &wire.Options{
		Notify: func(method string, _ json.RawMessage) { changed <- method },
		Request: func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"roots":[{"uri":"file:///r"}]}`), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	handshake(t, c)
	raw, err := c.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"roots","arguments":{}}`))
	if err != nil || !strings.Contains(string(raw), "file:///r") {
		t.Fatalf("a call that asks roots = %s, %v", raw, err)
	}
	for !rec.saw("GET session=true version=2025-11-25") {
		if _, err := c.Call(t.Context(), "ping", nil); err != nil { // awaits the GET stream's request, without a sleep
			t.Fatal(err)
		}
	}
	srv.AddTool(&mcp.Tool{Name: "later", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	if m := <-changed; m != "notifications/tools/list_changed" {
		t.Errorf("notification %s, want tools/list_changed", m)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"POST session=false version=", "POST session=true version=2025-11-25", "DELETE session=true version=2025-11-25"} {
		if !rec.saw(want) {
			t.Errorf("no request %q in %q", want, rec.reqs)
		}
	}
}

// Over HTTP an answer over MaxMessage fails its own call only.
func TestStreamableMessageBounded(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "big", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("a", 200000)}}}, nil
	})
	for name, opts := range map[string]*mcp.StreamableHTTPOptions{"event stream": nil, "JSON": {JSONResponse: true}} {
		t.Run(name, func(t *testing.T) {
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts))
			t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
			c, err := wire.Streamable(hs.URL, hs.Client(), &wire.Options{MaxMessage: 100000})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			handshake(t, c)
			_, err = c.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"big","arguments":{}}`))
			if err == nil || !strings.Contains(err.Error(), "over 100000 bytes, the limit of a wrapped server's message") {
				t.Fatalf("the big call = %v, want the limit named", err)
			}
			if _, err := c.Call(t.Context(), "ping", nil); err != nil {
				t.Errorf("a call after the big one: %v", err)
			}
		})
	}
}

// A session the server ended (404 to the session's request) ends the
// connection, saying so.
func TestStreamableSessionEnded(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "0"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var ended sync.Mutex
	gone := false
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ended.Lock()
		g := gone
		ended.Unlock()
		if g && r.Header.Get("Mcp-Session-Id") != "" {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	c, err := wire.Streamable(hs.URL, hs.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	handshake(t, c)
	ended.Lock()
	gone = true
	ended.Unlock()
	if _, err := c.Call(t.Context(), "ping", nil); err == nil || !strings.Contains(err.Error(), "the server ended the session: the server answered 404 Not Found: session not found") {
		t.Fatalf("a call after the session ended = %v", err)
	}
	<-c.Done()
}

// Over the HTTP+SSE transport of MCP 2024-11-05: messages go to the
// endpoint the stream names, answers come on the stream.
func TestSSE(t *testing.T) {
	srv := blocking(nil, nil)
	hs := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	c, err := wire.SSE(t.Context(), hs.URL, hs.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	handshake(t, c)
	raw, err := c.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"echo","arguments":{"x":1}}`))
	if err != nil || !strings.Contains(string(raw), `{\"x\":1}`) {
		t.Fatalf("call = %s, %v", raw, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(t.Context(), "ping", nil); !errors.Is(err, wire.ErrClosed) {
		t.Errorf("a call after Close = %v, want ErrClosed", err)
	}
}
