package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReplicasBehindALoadBalancer runs two plughost processes on one plugin
// directory behind HAProxy (Debian's, round robin, no stickiness) and
// drives a go-sdk v1.8.0 client speaking MCP 2026-07-28 through it:
// discover, list, call, a tool whose two input rounds (elicitation, then
// sampling) are retried on the other replica each time, and a
// subscriptions/listen stream that announces a plugin dropped into the
// shared directory. A 2025-11-25 session on one replica's endpoint meanwhile
// works as before. With a key each instead of a shared one, the retry that
// reaches the other replica is refused.
func TestReplicasBehindALoadBalancer(t *testing.T) {
	t.Parallel()
	t.Run("shared key", func(t *testing.T) {
		t.Parallel()
		key := strings.Repeat("k", 40)
		lb := startReplicas(t, key, key)
		client, changed := newReplicaClient(t)
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: lb.url, HTTPClient: lb.http}, nil)
		if err != nil {
			t.Fatalf("connect through the load balancer: %v", err)
		}
		defer cs.Close()
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %q, want 2026-07-28 (discover, no session)", v)
		}

		names := lb.toolNames(t, cs)
		for _, want := range []string{"echo", "twice"} {
			if !slices.Contains(names, want) {
				t.Fatalf("tools %v lack %q", names, want)
			}
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError || text(res) != "hi" {
			t.Fatalf("echo: %v %+v", err, res)
		}

		// Two input rounds: each retry carries the sealed state to the
		// replica the balancer picks next, the other one.
		lb.mark()
		res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "twice"})
		if err != nil || res.IsError || text(res) != "accept, then sampled: the user said accept" {
			t.Fatalf("twice: %v %+v", err, res)
		}
		calls := lb.since("tools/call")
		if len(calls) != 3 {
			t.Fatalf("twice took %d tools/call requests, want 3 (the call, two retries): %v", len(calls), calls)
		}
		for i := 1; i < len(calls); i++ {
			if !calls[i].retry || calls[i].replica == calls[i-1].replica {
				t.Errorf("round %d: %+v after %+v: want a retry with requestState served by the other replica", i+1, calls[i], calls[i-1])
			}
		}

		// A 2025-11-25 session, on one replica directly (sessions need
		// stickiness; plughost has no session store), is unaffected.
		old, err := newReplicaClientOnly(t).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: lb.replicas[0].url}, sessionEra)
		if err != nil {
			t.Fatalf("a 2025-11-25 session: %v", err)
		}
		defer old.Close()
		if v := old.InitializeResult().ProtocolVersion; v != "2025-11-25" {
			t.Fatalf("the session negotiated %q", v)
		}
		res, err = old.CallTool(t.Context(), &mcp.CallToolParams{Name: "twice"})
		if err != nil || res.IsError || text(res) != "accept, then sampled: the user said accept" {
			t.Fatalf("twice in a session: %v %+v", err, res)
		}

		// A plugin dropped into the shared directory: the listen stream
		// (on whichever replica holds it) says so, and both replicas list it.
		copyPlugin(t, "clock", lb.pluginDir, "clock")
		select {
		case <-changed:
		case <-time.After(30 * time.Second):
			t.Fatal("no tools/list_changed on the subscriptions/listen stream within 30s of adding a plugin")
		}
		for _, r := range lb.replicas {
			r.stderr.await(t, `version="clock `)
		}
		// Each replica lists it, asked directly: through the balancer the
		// go-sdk client would serve the second list from its cache (ttlMs),
		// and a list answered before the change can land in that cache
		// after list_changed emptied it. A fresh client per try has no cache.
		for i, r := range lb.replicas {
			deadline := time.Now().Add(30 * time.Second)
			for {
				fresh, err := newReplicaClientOnly(t).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: r.url}, nil)
				if err != nil {
					t.Fatalf("replica %d: %v", i, err)
				}
				names := lb.toolNames(t, fresh)
				fresh.Close()
				if slices.Contains(names, "get_current_time") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("30s after adding the clock plugin, replica %d's tools %v lack its tool get_current_time", i, names)
				}
				time.Sleep(100 * time.Millisecond) // a poll's pace: each try is a new client
			}
		}
	})
	t.Run("a key each", func(t *testing.T) {
		t.Parallel()
		lb := startReplicas(t, strings.Repeat("a", 40), strings.Repeat("b", 40))
		client, _ := newReplicaClient(t)
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: lb.url, HTTPClient: lb.http}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer cs.Close()
		_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "twice"})
		if err == nil || !strings.Contains(err.Error(), "requestState is not valid") {
			t.Fatalf("a retry sealed by one replica and opened by another with another key: error %v, want -32602 naming requestState", err)
		}
	})
}

// newReplicaClient returns a go-sdk client that accepts elicitations,
// answers sampling with "sampled: <text>", and reports tools/list_changed.
func newReplicaClient(t *testing.T) (*mcp.Client, chan struct{}) {
	changed := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "plughost-replicas-e2e", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			said := ""
			if len(r.Params.Messages) > 0 {
				if tc, ok := r.Params.Messages[0].Content.(*mcp.TextContent); ok {
					said = tc.Text
				}
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "sampled: " + said}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	return c, changed
}

// newReplicaClientOnly is newReplicaClient without the change channel.
func newReplicaClientOnly(t *testing.T) *mcp.Client {
	c, _ := newReplicaClient(t)
	return c
}

// balanced is two plughost replicas behind HAProxy.
type balanced struct {
	url       string // the balancer's MCP endpoint
	pluginDir string // shared by the replicas
	replicas  [2]*replica
	http      *http.Client // notes which replica answered each request

	mu     sync.Mutex
	served []served
	from   int // mark
}

// served is one request through the balancer: its method, whether it
// carried a requestState, and the replica that answered.
type served struct {
	method  string
	retry   bool
	replica string
}

// replica is one `plughost serve --http` of the pair.
type replica struct {
	url    string
	cmd    *exec.Cmd
	stderr *lineBuffer
	exited chan struct{}
	killed bool // by the test: its exit is not checked
}

// startReplicas starts two replicas on one plugin directory (echo and
// askplugin), the first with state key keyA and the second with keyB (from
// the environment, as an operator would), and HAProxy in front of them.
func startReplicas(t *testing.T, keyA, keyB string) *balanced {
	t.Helper()
	return startReplicasWith(t, keyA, keyB, "")
}

// startReplicasWith is startReplicas with a configuration file (its text;
// "" for none) that both replicas read.
func startReplicasWith(t *testing.T, keyA, keyB, config string) *balanced {
	t.Helper()
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/haproxy"); serr != nil {
			t.Fatalf("this test needs HAProxy (Debian: apt-get install haproxy; .ci/run installs it): %v", err)
		}
		haproxy = "/usr/sbin/haproxy"
	}
	lb := &balanced{pluginDir: t.TempDir()}
	for _, p := range []string{"echo", "askplugin"} {
		copyPlugin(t, p, lb.pluginDir, p)
	}
	workspace := t.TempDir()
	args := []string{"serve", "--http", "127.0.0.1:0", "--plugins", lb.pluginDir, "--workspace", workspace, "--log-level", "debug"}
	if config != "" {
		path := filepath.Join(t.TempDir(), "plughost.hcl")
		if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	for i, key := range []string{keyA, keyB} {
		r := &replica{stderr: newLineBuffer(), exited: make(chan struct{})}
		r.cmd = exec.Command(bin.plughost, args...)
		r.cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "PLUGHOST_TOKEN=",
			"PLUGHOST_STATE_KEY="+key)
		r.cmd.Stderr = r.stderr
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { r.cmd.Wait(); close(r.exited) }()
		lb.replicas[i] = r
	}
	t.Cleanup(func() { lb.stop(t) })
	for _, r := range lb.replicas {
		r.stderr.await(t, "serving MCP over Streamable HTTP")
		m := listenURL.FindStringSubmatch(r.stderr.String())
		if m == nil {
			t.Fatalf("no URL in the log:\n%s", r.stderr)
		}
		r.url = m[1] + "/mcp"
	}

	// HAProxy gets its listening socket from us (fd 3): no port to race for.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lf, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	server := func(name, u string) string {
		return "  server " + name + " " + strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp") + "\n"
	}
	cfg := "global\n  maxconn 256\n" +
		"defaults\n  mode http\n  timeout connect 5s\n  timeout client 2m\n  timeout server 2m\n" +
		"frontend mcp\n  bind fd@3\n  default_backend replicas\n" +
		"backend replicas\n  balance roundrobin\n  http-response set-header X-Replica %[srv_name]\n" +
		server("a", lb.replicas[0].url) + server("b", lb.replicas[1].url)
	cfgPath := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	hp := exec.Command(haproxy, "-db", "-f", cfgPath)
	hp.ExtraFiles = []*os.File{lf}
	hpOut := newLineBuffer()
	hp.Stdout, hp.Stderr = hpOut, hpOut
	if err := hp.Start(); err != nil {
		t.Fatalf("haproxy: %v", err)
	}
	hpDone := make(chan struct{})
	go func() { hp.Wait(); close(hpDone) }()
	t.Cleanup(func() {
		hp.Process.Signal(syscall.SIGTERM)
		<-hpDone
		if t.Failed() {
			t.Logf("haproxy output:\n%s", hpOut)
		}
	})
	lb.url = "http://" + ln.Addr().String() + "/mcp"
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	lb.http = &http.Client{Transport: &notingTransport{base: base, lb: lb}}
	return lb
}

// notingTransport records which replica answered each request.
type notingTransport struct {
	base http.RoundTripper
	lb   *balanced
}

func (n *notingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var retry bool
	if r.Body != nil && r.GetBody != nil {
		if b, err := r.GetBody(); err == nil {
			body, _ := io.ReadAll(b)
			retry = bytes.Contains(body, []byte(`"requestState"`))
		}
	}
	resp, err := n.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	n.lb.mu.Lock()
	n.lb.served = append(n.lb.served, served{method: r.Header.Get("Mcp-Method"), retry: retry, replica: resp.Header.Get("X-Replica")})
	n.lb.mu.Unlock()
	return resp, nil
}

// mark starts the record that since returns.
func (lb *balanced) mark() {
	lb.mu.Lock()
	lb.from = len(lb.served)
	lb.mu.Unlock()
}

// since returns the requests of method served since mark.
func (lb *balanced) since(method string) []served {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	var out []served
	for _, s := range lb.served[lb.from:] {
		if s.method == method {
			out = append(out, s)
		}
	}
	return out
}

// toolNames lists the tools through the balancer.
func (lb *balanced) toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tl, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tl.Name)
	}
	return names
}

// stop ends both replicas with SIGTERM, each within 20s and cleanly, and
// checks that no plugin process outlived them.
func (lb *balanced) stop(t *testing.T) {
	var errs []error
	for _, r := range lb.replicas {
		if r != nil {
			r.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for i, r := range lb.replicas {
		if r == nil {
			continue
		}
		select {
		case <-r.exited:
		case <-time.After(20 * time.Second):
			r.cmd.Process.Kill()
			<-r.exited
			errs = append(errs, fmt.Errorf("replica %d did not exit within 20s of SIGTERM", i))
		}
		if code := r.cmd.ProcessState.ExitCode(); code != 0 && !r.killed {
			errs = append(errs, fmt.Errorf("replica %d exited with code %d", i, code))
		}
	}
	if leftover := processesUnder(lb.pluginDir); len(leftover) > 0 {
		errs = append(errs, fmt.Errorf("plugin processes outlived the replicas: %v", leftover))
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
		for i, r := range lb.replicas {
			t.Logf("replica %d stderr:\n%s", i, r.stderr)
		}
	}
}
