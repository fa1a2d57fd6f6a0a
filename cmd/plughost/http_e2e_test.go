package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpHost is a running `plughost serve --http 127.0.0.1:0`.
type httpHost struct {
	t         *testing.T
	cmd       *exec.Cmd
	base      string // http://127.0.0.1:PORT, https:// with --tls-cert
	pluginDir string
	workspace string // the files plugin's, writable by the plugins' uid
	stderr    *lineBuffer
	wire      *wireCheck
	exited    chan struct{}
	// tlsClient is the client side of --tls-cert (trusting its CA), for
	// httpClient; nil over plain HTTP.
	tlsClient *tls.Config
}

var listenURL = regexp.MustCompile(`url=(https?://127\.0\.0\.1:\d+)/mcp`)

func startHTTPHost(t *testing.T, plugins ...string) *httpHost {
	t.Helper()
	return startHTTPHostWith(t, nil, plugins...)
}

// startHTTPHostWith is startHTTPHost with serve's further arguments.
func startHTTPHostWith(t *testing.T, args []string, plugins ...string) *httpHost {
	t.Helper()
	return startHTTPHostEnv(t, nil, args, plugins...)
}

// startHTTPHostEnv is startHTTPHostWith with env (NAME=value entries)
// added to plughost's environment.
func startHTTPHostEnv(t *testing.T, env, args []string, plugins ...string) *httpHost {
	t.Helper()
	h := &httpHost{t: t, pluginDir: t.TempDir(), workspace: t.TempDir(), stderr: newLineBuffer(), wire: newWireCheck(), exited: make(chan struct{})}
	if err := os.Chmod(h.workspace, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, p := range plugins {
		copyPlugin(t, p, h.pluginDir, p)
	}
	h.cmd = exec.Command(bin.plughost, append([]string{"serve", "--http", "127.0.0.1:0", "--plugins", h.pluginDir,
		"--workspace", h.workspace, "--log-level", "debug"}, args...)...)
	h.cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "PLUGHOST_TOKEN=")
	h.cmd.Env = append(h.cmd.Env, env...)
	h.cmd.Stderr = h.stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.cmd.Wait(); close(h.exited) }()
	t.Cleanup(h.stop)
	h.stderr.await(t, "serving MCP over Streamable HTTP")
	m := listenURL.FindStringSubmatch(h.stderr.String())
	if m == nil {
		t.Fatalf("no URL in the log:\n%s", h.stderr)
	}
	h.base = m[1]
	return h
}

// stop sends SIGTERM, expects a clean exit, and checks that no plugin
// process outlived plughost and that every message was schema-valid.
func (h *httpHost) stop() {
	t := h.t
	select {
	case <-h.exited:
	default:
		h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
		case <-time.After(20 * time.Second):
			h.cmd.Process.Kill()
			t.Errorf("plughost did not exit within 20s of SIGTERM\nstderr:\n%s", h.stderr)
			<-h.exited
		}
	}
	if code := h.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("plughost exited with code %d\nstderr:\n%s", code, h.stderr)
	}
	if leftover := processesUnder(h.pluginDir); len(leftover) > 0 {
		t.Errorf("plugin processes outlived the host: %v", leftover)
	}
	for _, err := range h.wire.errors() {
		t.Errorf("wire: %v", err)
	}
	if t.Failed() {
		t.Logf("plughost stderr:\n%s", h.stderr)
	}
}

// connect connects the go-sdk client through transport, whose HTTP
// traffic is schema-checked.
func (h *httpHost) connect(transport mcp.Transport, listChanged chan struct{}) *mcp.ClientSession {
	h.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "plughost-e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			if listChanged != nil {
				listChanged <- struct{}{}
			}
		},
	})
	// The SSE transport's stream lives in Connect's context: it must last
	// as long as the test.
	cs, err := client.Connect(h.t.Context(), transport, sessionEra)
	if err != nil {
		h.t.Fatalf("connect: %v\nstderr:\n%s", err, h.stderr)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

// httpClient returns a client whose requests and responses pass through
// the wire check.
func (h *httpHost) httpClient(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	base := &http.Transport{DialContext: dial, TLSClientConfig: h.tlsClient}
	h.t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: &checkingTransport{base: base, w: h.wire}}
}

// checkingTransport feeds the wire check: the methods of requests going
// out, and every JSON-RPC message coming back (JSON bodies and SSE events).
type checkingTransport struct {
	base http.RoundTripper
	w    *wireCheck
}

// CloseIdleConnections closes the base transport's idle connections
// (http.Client.CloseIdleConnections looks for it).
func (c *checkingTransport) CloseIdleConnections() {
	if b, ok := c.base.(interface{ CloseIdleConnections() }); ok {
		b.CloseIdleConnections()
	}
}

func (c *checkingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		tap := &clientTap{WriteCloser: nopWriteCloser{}, w: c.w}
		tap.Write(append(bytes.TrimSpace(body), '\n'))
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case resp.StatusCode == http.StatusOK && ct == "application/json":
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			c.w.check(body)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	case ct == "text/event-stream":
		pr, pw := io.Pipe()
		orig := resp.Body
		go func() {
			sc := bufio.NewScanner(io.TeeReader(orig, pw))
			sc.Buffer(nil, 16<<20)
			event := ""
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "event: "):
					event = line[7:]
				case line == "data: " || line == "data:":
					// a priming event (2025-11-25): an id and empty data, no message
				case strings.HasPrefix(line, "data: ") && (event == "" || event == "message"):
					c.w.check([]byte(line[6:]))
				case line == "":
					event = ""
				}
			}
			pw.CloseWithError(sc.Err())
		}()
		resp.Body = struct {
			io.Reader
			io.Closer
		}{pr, closerFunc(func() error { pr.Close(); return orig.Close() })}
	}
	return resp, nil
}

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// TestServeHTTP drives `plughost serve --http` with the go-sdk client's
// Streamable HTTP transport: initialize, list, call, a list_changed on the
// GET stream when a plugin is dropped in, and a clean SIGTERM.
func TestServeHTTP(t *testing.T) {
	t.Parallel()
	h := startHTTPHost(t, "echo")
	changed := make(chan struct{}, 10)
	cs := h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: h.httpClient(nil)}, changed)
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated %q", v)
	}
	awaitToolsOf(t, cs, changed, "echo", "sleep")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over http"}})
	if err != nil || res.IsError || text(res) != "over http" {
		t.Fatalf("echo = %v %v", res, err)
	}
	// A call with progress is answered as an event stream.
	p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 300}}
	p.SetProgressToken("p1")
	if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
		t.Fatalf("sleep = %v %v", res, err)
	}
	copyPlugin(t, "clock", h.pluginDir, "clock")
	awaitToolsOf(t, cs, changed, "echo", "sleep", "get_current_time")
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_current_time"}); err != nil || res.IsError {
		t.Errorf("get_current_time = %v %v", res, err)
	}
	h.stop()
	h.stderr.await(t, "stopped")
	// The wire check saw the traffic: the progress came as SSE events and
	// list_changed on the GET stream.
	for _, m := range []string{"notifications/progress", "notifications/tools/list_changed"} {
		if h.wire.notifications(m) == 0 {
			t.Errorf("no %s crossed the wire check", m)
		}
	}
}

// TestServeHTTPRefusesExposure: listening beyond loopback without a token
// refuses to start, saying why, before loading any plugin.
func TestServeHTTPRefusesExposure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyPlugin(t, "echo", dir, "echo")
	cmd := exec.Command(bin.plughost, "serve", "--http", "0.0.0.0:0", "--plugins", dir, "--workspace", t.TempDir())
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "PLUGHOST_TOKEN=")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "token is required") || !strings.Contains(string(out), "--token") {
		t.Errorf("exit %v, output:\n%s\nwant exit 1 and a message asking for --token", err, out)
	}
	if strings.Contains(string(out), "loading plugins") {
		t.Errorf("plugins were loaded before refusing:\n%s", out)
	}
}

// TestServeHTTPLegacySSE: a 2024-11-05 client on the deprecated HTTP+SSE
// transport (the go-sdk's SSEClientTransport).
func TestServeHTTPLegacySSE(t *testing.T) {
	t.Parallel()
	h := startHTTPHost(t, "echo")
	changed := make(chan struct{}, 10)
	cs := h.connect(&mcp.SSEClientTransport{Endpoint: h.base + "/sse", HTTPClient: h.httpClient(nil)}, changed)
	awaitToolsOf(t, cs, changed, "echo", "sleep")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "old school"}})
	if err != nil || text(res) != "old school" {
		t.Fatalf("echo = %v %v", res, err)
	}
	copyPlugin(t, "clock", h.pluginDir, "clock")
	awaitToolsOf(t, cs, changed, "echo", "sleep", "get_current_time")
}

// TestServeHTTPResume cuts the client's connections while a plugin is
// removed: the list_changed sent meanwhile waits in the session's buffer,
// and reaches the client when it reconnects with Last-Event-ID.
func TestServeHTTPResume(t *testing.T) {
	t.Parallel()
	h := startHTTPHost(t, "echo", "clock")
	px := newProxy(t, strings.TrimPrefix(h.base, "http://"))
	changed := make(chan struct{}, 10)
	cs := h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: h.httpClient(px.dial)}, changed)
	awaitToolsOf(t, cs, changed, "echo", "sleep", "get_current_time")

	// A first list_changed on the GET stream gives the client an event id.
	copyPlugin(t, "clock", h.pluginDir, "clock2")
	awaitToolsOf(t, cs, changed, "echo", "sleep", "get_current_time", "clock2__get_current_time")

	px.pause()
	px.sever()
	h.stderr.await(t, "SSE stream closed by the client")
	if err := os.Remove(filepath.Join(h.pluginDir, "clock2")); err != nil {
		t.Fatal(err)
	}
	h.stderr.await(t, "event kept for a detached stream")
	px.resume()
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatalf("the list_changed sent while disconnected never arrived\nstderr:\n%s", h.stderr)
	}
	awaitToolsOf(t, cs, changed, "echo", "sleep", "get_current_time")
	if px.lastEventIDs() == 0 {
		t.Error("the client did not resume with Last-Event-ID")
	}
}

// awaitToolsOf waits until the session lists exactly want.
func awaitToolsOf(t *testing.T, cs *mcp.ClientSession, changed chan struct{}, want ...string) {
	t.Helper()
	slices.Sort(want)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var got []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			got = append(got, tool.Name)
		}
		slices.Sort(got)
		if strings.Join(got, ",") == strings.Join(want, ",") {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("tools = %v, want %v (no further list_changed within 30s)", got, want)
		}
	}
}

// proxy is a TCP relay the test can cut and hold: a stand-in for a flaky
// network between client and server. It also counts GETs that carry
// Last-Event-ID.
type proxy struct {
	t       *testing.T
	backend string
	mu      sync.Mutex
	conns   []net.Conn
	held    chan struct{} // closed while connections flow; nil-able by pause
	resumes int
}

func newProxy(t *testing.T, backend string) *proxy {
	p := &proxy{t: t, backend: backend, held: make(chan struct{})}
	close(p.held)
	t.Cleanup(p.sever)
	return p
}

// dial is the client's DialContext: a pipe to a fresh backend connection,
// opened once the proxy is not paused.
func (p *proxy) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	p.mu.Lock()
	held := p.held
	p.mu.Unlock()
	select {
	case <-held:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	back, err := net.Dial("tcp", p.backend)
	if err != nil {
		return nil, err
	}
	front, mine := net.Pipe()
	p.mu.Lock()
	p.conns = append(p.conns, back, mine)
	p.mu.Unlock()
	go func() { io.Copy(back, p.sniff(mine)); back.Close() }()
	go func() { io.Copy(mine, back); mine.Close() }()
	return front, nil
}

// sniff counts requests carrying Last-Event-ID.
func (p *proxy) sniff(r io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(io.TeeReader(r, pw))
		for sc.Scan() {
			if strings.HasPrefix(strings.ToLower(sc.Text()), "last-event-id:") {
				p.mu.Lock()
				p.resumes++
				p.mu.Unlock()
			}
		}
		pw.CloseWithError(io.EOF)
	}()
	return pr
}

func (p *proxy) lastEventIDs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resumes
}

func (p *proxy) pause() {
	p.mu.Lock()
	p.held = make(chan struct{})
	p.mu.Unlock()
}

func (p *proxy) resume() {
	p.mu.Lock()
	close(p.held)
	p.mu.Unlock()
}

// sever closes every connection made so far.
func (p *proxy) sever() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestHelpHidesToken: `serve -h` never prints $PLUGHOST_TOKEN (it used to
// show it as the --token flag's default), yet the variable still sets the
// token.
func TestHelpHidesToken(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(bin.plughost, "serve", "-h")
	cmd.Env = append(os.Environ(), "PLUGHOST_TOKEN=do-not-print-me")
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), "do-not-print-me") {
		t.Errorf("serve -h printed the token:\n%s", out)
	}
	if !strings.Contains(string(out), "$PLUGHOST_TOKEN") {
		t.Errorf("serve -h does not say where the token may come from:\n%s", out)
	}
}
