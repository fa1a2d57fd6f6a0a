package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/device"
	"github.com/plughost/plughost/internal/testcert"
)

// tlsHost is a running `plughost serve --http 127.0.0.1:0` with
// --tls-cert and --tls-key: a CA-signed pair for localhost, serial 1, in
// dir.
type tlsHost struct {
	*httpHost
	ca                *testcert.CA
	dir               string
	certFile, keyFile string
}

func startTLSHost(t *testing.T, args []string, plugins ...string) *tlsHost {
	t.Helper()
	ca := testcert.NewCA(t)
	dir := t.TempDir()
	cert, key := ca.Leaf(t, 1)
	certFile, keyFile := testcert.Write(t, dir, cert, key)
	h := startHTTPHostWith(t, append([]string{"--tls-cert", certFile, "--tls-key", keyFile}, args...), plugins...)
	h.tlsClient = &tls.Config{RootCAs: ca.Pool}
	return &tlsHost{httpHost: h, ca: ca, dir: dir, certFile: certFile, keyFile: keyFile}
}

// logged returns the first group of re in the host's log.
func (h *httpHost) logged(re string) string {
	h.t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(h.stderr.String())
	if m == nil {
		h.t.Fatalf("no %s in the log:\n%s", re, h.stderr)
	}
	return m[1]
}

// served dials addr with a new TLS connection that trusts h's CA and
// returns the serial number of the certificate it was shown.
func (h *tlsHost) served(addr string) string {
	h.t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: h.ca.Pool})
	if err != nil {
		h.t.Fatalf("TLS to %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestServeHTTPS: with --tls-cert and --tls-key the go-sdk client speaks
// Streamable HTTP and the legacy HTTP+SSE over HTTPS; /metrics, on the
// listener and on --metrics-listen, is HTTPS; the browser origins of an
// https:// page pass the Origin guard as http:// ones do; plain HTTP to
// the port gets a 400 saying why; TLS below 1.2 is refused; a client
// stalled before its handshake stalls no other.
func TestServeHTTPS(t *testing.T) {
	t.Parallel()
	h := startTLSHost(t, []string{"--metrics-listen", "127.0.0.1:0", "--allowed-origin", "https://localhost:6274"}, "echo")
	if !strings.HasPrefix(h.base, "https://") {
		t.Fatalf("serving at %s, want https://", h.base)
	}
	// A client that connects and never says hello holds only its own
	// connection: everything below is served meanwhile.
	stalled, err := net.Dial("tcp", strings.TrimPrefix(h.base, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for name, transport := range map[string]mcp.Transport{
		"streamable": &mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: h.httpClient(nil)},
		"legacy SSE": &mcp.SSEClientTransport{Endpoint: h.base + "/sse", HTTPClient: h.httpClient(nil)},
	} {
		changed := make(chan struct{}, 10)
		cs := h.connect(transport, changed)
		awaitToolsOf(t, cs, changed, "echo", "sleep")
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over https"}})
		if err != nil || res.IsError || text(res) != "over https" {
			t.Errorf("%s: echo = %v %v", name, res, err)
		}
	}

	metricsURL := h.logged(`serving Prometheus metrics: url=(\S+)`)
	client := h.httpClient(nil)
	for _, url := range []string{h.base + "/metrics", metricsURL} {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte("plughost_")) {
			t.Errorf("GET %s: %d %.200s", url, resp.StatusCode, body)
		}
	}

	for origin, want := range map[string]int{
		h.base:                   200, // the server's own, https://
		"https://localhost:6274": 200, // --allowed-origin
		"http://localhost:6274":  403, // another scheme is another origin
		"https://evil.example":   403,
	} {
		req, _ := http.NewRequest("GET", h.base+"/healthz", nil)
		req.Header.Set("Origin", origin)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Origin %s: %d, want %d", origin, resp.StatusCode, want)
		}
	}

	for _, addr := range []string{strings.TrimPrefix(h.base, "https://"), strings.TrimSuffix(strings.TrimPrefix(metricsURL, "https://"), "/metrics")} {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("plain HTTP to %s: %v", addr, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(body), "Client sent an HTTP request to an HTTPS server") {
			t.Errorf("plain HTTP to %s: %d %q, want 400 saying the server speaks HTTPS", addr, resp.StatusCode, body)
		}
	}

	old := &tls.Config{RootCAs: h.ca.Pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	if c, err := tls.Dial("tcp", strings.TrimPrefix(h.base, "https://"), old); err == nil {
		c.Close()
		t.Errorf("a TLS 1.1 client was served")
	}
}

// register is a device's frame registering get_current_time.
func register() []byte {
	b, _ := device.AppendFrame(nil, device.Frame{Type: device.TypeMCP, Task: "mcp00001", Payload: []byte(
		`{"type":"register","data":{"services":{"get_current_time":{"description":"Get the current time",` +
			`"parameters":{"type":"object","properties":{}}}}}}`)})
	return b
}

// runDevice is a scripted device over conn: it registers
// get_current_time and answers each call with "14:30".
func runDevice(t *testing.T, conn net.Conn) {
	t.Helper()
	if _, err := conn.Write(register()); err != nil {
		t.Fatal(err)
	}
	go answerCalls(conn, nil)
}

// answerCalls reads conn's frames until it ends, answering each call
// with "14:30" and passing every other frame to others (dropped when nil,
// closed at the end when not).
func answerCalls(conn net.Conn, others chan<- device.Frame) {
	if others != nil {
		defer close(others)
	}
	dec := device.NewDecoder(conn, 1<<20)
	for {
		f, err := dec.Next()
		if err != nil {
			return
		}
		var msg struct {
			Type string `json:"type"`
			Data struct {
				CallID string `json:"call_id"`
			} `json:"data"`
		}
		if f.Type == device.TypeMCP && json.Unmarshal(f.Payload, &msg) == nil && msg.Type == "call" {
			res, _ := json.Marshal(map[string]any{"type": "result", "data": map[string]any{
				"call_id": msg.Data.CallID, "result": map[string]any{"success": true, "data": "14:30"}}})
			b, _ := device.AppendFrame(nil, device.Frame{Type: device.TypeMCP, Task: f.Task, Payload: res})
			conn.Write(b)
			continue
		}
		if others != nil {
			others <- f
		}
	}
}

// TestDeviceTLS: with --tls-cert the device listener speaks TLS: a
// device that connects with TLS registers and its tool is called by the
// go-sdk client over HTTPS; a device speaking plain frames gets a plain
// STATUS error saying the port speaks TLS, and is disconnected; a device
// stalled before its handshake stalls no other.
func TestDeviceTLS(t *testing.T) {
	t.Parallel()
	h := startTLSHost(t, []string{"--device-listen", "127.0.0.1:0"})
	h.stderr.await(t, "accepting devices")
	addr := h.logged(`accepting devices: addr=(\S+)`)
	if !strings.Contains(h.stderr.String(), "tls=true") {
		t.Errorf("the device listener does not say it speaks TLS:\n%s", h.stderr)
	}

	// A device that connects and never says hello holds only its own
	// connection: the others below are served meanwhile.
	stalled, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	plain, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.Write(register()); err != nil {
		t.Fatal(err)
	}
	plain.SetReadDeadline(time.Now().Add(30 * time.Second))
	f, err := device.NewDecoder(plain, 1<<20).Next()
	if err != nil || f.Type != device.TypeStatus || string(f.Payload) != "##ERROR:this port speaks TLS: connect with TLS; closing" {
		t.Errorf("a plain device got %v, %v; want a STATUS error saying the port speaks TLS", f, err)
	}
	if _, err := plain.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the plain device's connection after the error: %v, want EOF", err)
	}

	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: h.ca.Pool})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	runDevice(t, conn)
	changed := make(chan struct{}, 10)
	cs := h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: h.httpClient(nil)}, changed)
	awaitToolsOf(t, cs, changed, "get_current_time")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_current_time"})
	if err != nil || res.IsError || text(res) != "14:30" {
		t.Errorf("get_current_time over a TLS device = %v %v", res, err)
	}
}

// TestTLSReload: a new pair renamed over the files serves the next TLS
// connection of both listeners, while a connection opened before goes
// on with the old one and the MCP session goes on; a broken pair after
// it is refused, logged at WARN, and the pair before it goes on serving.
func TestTLSReload(t *testing.T) {
	t.Parallel()
	h := startTLSHost(t, []string{"--device-listen", "127.0.0.1:0"}, "echo")
	h.stderr.await(t, "accepting devices")
	httpAddr, devAddr := strings.TrimPrefix(h.base, "https://"), h.logged(`accepting devices: addr=(\S+)`)
	changed := make(chan struct{}, 10)
	cs := h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: h.httpClient(nil)}, changed)
	awaitToolsOf(t, cs, changed, "echo", "sleep")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	echo := func(when string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": when}})
		if err != nil || res.IsError || text(res) != when {
			t.Errorf("echo %s = %v %v", when, res, err)
		}
	}
	echo("before")
	before, err := tls.Dial("tcp", httpAddr, &tls.Config{RootCAs: h.ca.Pool})
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	for _, addr := range []string{httpAddr, devAddr} {
		if got := h.served(addr); got != "1" {
			t.Fatalf("%s serves serial %s, want 1", addr, got)
		}
	}

	cert, key := h.ca.Leaf(t, 2)
	testcert.Write(t, h.dir, cert, key)
	h.stderr.await(t, "TLS certificate reloaded")
	for _, addr := range []string{httpAddr, devAddr} {
		if got := h.served(addr); got != "2" {
			t.Errorf("%s serves serial %s after the reload, want 2", addr, got)
		}
	}
	// The connection opened before: still served, with the old pair.
	if got := before.ConnectionState().PeerCertificates[0].SerialNumber.String(); got != "1" {
		t.Errorf("the connection opened before the reload has serial %s, want 1", got)
	}
	if _, err := before.Write([]byte("GET /healthz HTTP/1.1\r\nHost: " + httpAddr + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(before), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("GET /healthz on the connection opened before the reload: %v %v", resp, err)
	}
	echo("after")

	// A refusal of its own: one was logged already if the two renames
	// above were slow enough to be seen apart (a new certificate with the
	// old key).
	const refused = "the new TLS certificate was refused: still serving the previous one"
	refusals := strings.Count(h.stderr.String(), refused)
	_, otherKey := h.ca.Leaf(t, 3)
	testcert.Replace(t, h.keyFile, otherKey)
	for deadline := time.Now().Add(30 * time.Second); strings.Count(h.stderr.String(), refused) == refusals; {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal of the broken pair within 30s:\n%s", h.stderr)
		}
		h.stderr.awaitChange(time.Until(deadline))
	}
	log := h.stderr.String()
	if !regexp.MustCompile(`\[WARN\] +plughost\.tls: the new TLS certificate was refused.*private key does not match public key`).MatchString(log) {
		t.Errorf("the refusal is not a WARN saying why:\n%s", log)
	}
	if strings.Contains(log, "PRIVATE KEY") {
		t.Errorf("the log shows the key")
	}
	for _, addr := range []string{httpAddr, devAddr} {
		if got := h.served(addr); got != "2" {
			t.Errorf("%s serves serial %s after a broken pair, want 2 still", addr, got)
		}
	}
	echo("after the broken pair")
}

// TestTLSFlagsRefused: --tls-cert and --tls-key go together, with a
// listener to secure, and their pair must load: each mistake is refused
// in one line before any plugin loads.
func TestTLSFlagsRefused(t *testing.T) {
	t.Parallel()
	ca := testcert.NewCA(t)
	dir := t.TempDir()
	cert, key := ca.Leaf(t, 1)
	certFile, keyFile := testcert.Write(t, dir, cert, key)
	_, otherKey := ca.Leaf(t, 2)
	otherKeyFile := filepath.Join(dir, "other.key")
	testcert.Replace(t, otherKeyFile, otherKey)
	missing := filepath.Join(dir, "missing.crt")
	for name, tc := range map[string]struct {
		args []string
		code int
		want string // the whole last line of stderr
	}{
		"cert without key": {[]string{"--http", "127.0.0.1:0", "--tls-cert", certFile}, 2,
			"plughost serve: --tls-cert needs --tls-key, the certificate's private key (run plughost serve --help)"},
		"key without cert": {[]string{"--device-listen", "127.0.0.1:0", "--tls-key", keyFile}, 2,
			"plughost serve: --tls-key needs --tls-cert, the certificate of the key (run plughost serve --help)"},
		"no listener": {[]string{"--tls-cert", certFile, "--tls-key", keyFile}, 2,
			"plughost serve: --tls-cert secures a listener, and over stdio there is none: give --http, --device-listen or --metrics-listen (run plughost serve --help)"},
		"missing cert": {[]string{"--http", "127.0.0.1:0", "--tls-cert", missing, "--tls-key", keyFile}, 1,
			"plughost serve: --tls-cert, --tls-key: open " + missing + ": no such file or directory"},
		"key of another cert": {[]string{"--http", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", otherKeyFile}, 1,
			"plughost serve: --tls-cert, --tls-key: " + certFile + " and " + otherKeyFile + ": tls: private key does not match public key"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin.plughost, append([]string{"serve", "--plugins", t.TempDir(), "--workspace", t.TempDir()}, tc.args...)...)
			cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "PLUGHOST_TOKEN=")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Run()
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if code := cmd.ProcessState.ExitCode(); code != tc.code || lines[len(lines)-1] != tc.want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and last line\n%s", code, &stderr, tc.code, tc.want)
			}
			if strings.Contains(stderr.String(), "loading plugins") {
				t.Errorf("plugins were loaded before refusing:\n%s", &stderr)
			}
		})
	}
}

// TestTLSClearTokenWarning: a token sent to a listener reachable beyond
// loopback without TLS of plughost's own travels in clear, which the log
// warns of for --http and --device-listen; with --tls-cert it does not;
// never does the log show a token.
func TestTLSClearTokenWarning(t *testing.T) {
	t.Parallel()
	for name, withTLS := range map[string]bool{"plain": false, "TLS": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tokens := filepath.Join(dir, "device-tokens")
			os.WriteFile(tokens, []byte("dev1ce-s3cret\n"), 0o600)
			args := []string{"serve", "--plugins", t.TempDir(), "--workspace", t.TempDir(), "--log-level", "debug",
				"--http", "0.0.0.0:0", "--token", "http-s3cret", "--device-listen", "0.0.0.0:0", "--device-tokens", tokens}
			if withTLS {
				ca := testcert.NewCA(t)
				cert, key := ca.Leaf(t, 1)
				certFile, keyFile := testcert.Write(t, dir, cert, key)
				args = append(args, "--tls-cert", certFile, "--tls-key", keyFile)
			}
			cmd := exec.Command(bin.plughost, args...)
			cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
			stderr := newLineBuffer()
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			stderr.await(t, "serving MCP over Streamable HTTP")
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("plughost: %v\n%s", err, stderr)
				}
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("plughost did not exit within 20s of SIGTERM\n%s", stderr)
			}
			log := stderr.String()
			want := 0
			if !withTLS {
				want = 2
			}
			if n := strings.Count(log, "[WARN]  plughost: tokens travel in clear to "); n != want {
				t.Errorf("%d warnings of tokens in clear, want %d:\n%s", n, want, log)
			}
			if strings.Contains(log, "s3cret") {
				t.Errorf("the log shows a token:\n%s", log)
			}
		})
	}
}
