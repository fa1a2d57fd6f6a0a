package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The OTLP tests export plughost's traces to a real receiver: the
// OpenTelemetry Collector's otlpreceiver, built from its Go module in
// internal/otlpsink (a module of its own, so that the collector's
// dependencies stay out of plughost's), run as a process that writes
// what it receives as JSON lines.

// otlpSinkBin builds internal/otlpsink once, for the tests that need it.
var otlpSinkBin = sync.OnceValues(func() (string, error) {
	out := filepath.Join(bin.dir, "otlpsink")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = filepath.Join("..", "..", "internal", "otlpsink")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building internal/otlpsink: %v\n%s", err, b)
	}
	return out, nil
})

// sinkSpan is a span as otlpsink writes it.
type sinkSpan struct {
	Span         string           `json:"span"`
	Kind         string           `json:"kind"`
	TraceID      string           `json:"trace_id"`
	SpanID       string           `json:"span_id"`
	ParentSpanID string           `json:"parent_span_id"`
	Service      string           `json:"service"`
	Status       string           `json:"status"`
	Attributes   map[string]any   `json:"attributes"`
	Metric       string           `json:"metric"` // a metric's line instead, with its data points' attributes
	Points       []map[string]any `json:"points"`
}

// otlpSink is a running otlpsink.
type otlpSink struct {
	grpc, http string // its addresses

	mu      sync.Mutex
	lines   []sinkSpan
	changed chan struct{} // closed and replaced on every line
}

// startOTLPSink runs otlpsink on two free loopback ports until the test
// ends.
func startOTLPSink(t *testing.T) *otlpSink {
	t.Helper()
	path, err := otlpSinkBin()
	if err != nil {
		t.Fatal(err)
	}
	s := &otlpSink{grpc: freeAddr(t), http: freeAddr(t), changed: make(chan struct{})}
	cmd := exec.Command(path, "-grpc", s.grpc, "-http", s.http)
	stderr := newLineBuffer()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe() // closed at cleanup: the sink exits
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var l sinkSpan
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				continue
			}
			s.mu.Lock()
			s.lines = append(s.lines, l)
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
		}
	}()
	stderr.awaitWithin(t, "ready", 60*time.Second)
	return s
}

// freeAddr is a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// await waits (at most 60 s) until the sink has received a line that
// matches, and returns it.
func (s *otlpSink) await(t *testing.T, what string, match func(sinkSpan) bool) sinkSpan {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		s.mu.Lock()
		for _, l := range s.lines {
			if match(l) {
				s.mu.Unlock()
				return l
			}
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("the collector received no %s within 60s; it has:\n%+v", what, s.lines)
		}
	}
}

// TestTracesOverOTLP: a real plughost serve, configured by an
// observability block to export over gRPC, then over HTTP, to a real OTLP
// receiver; a client calls a tool with a traceparent in _meta. The
// collector receives one trace, linked as the conventions and the issue
// say: the client's span → the MCP request's server span ("tools/call
// work", with mcp.method.name, mcp.protocol.version, jsonrpc.request.id,
// gen_ai.tool.name) → the catalog's routing → the hook and the plugin call
// (a client span) → the plugin's own span, which the plugin exported with
// the trace context it was handed. When the host exits, it flushes the
// mcp.server.operation.duration metric.
func TestTracesOverOTLP(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"grpc", "http"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			sink := startOTLPSink(t)
			endpoint := map[string]string{"grpc": sink.grpc, "http": sink.http}[protocol]
			dir := t.TempDir()
			headers := filepath.Join(dir, "otlp-headers")
			if err := os.WriteFile(headers, []byte("# the collector's key\nX-Api-Key: not-a-real-key\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "plughost.hcl")
			if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`observability {
  service_name = "plughost-e2e"
  sample_ratio = 1
  otlp {
    endpoint     = "http://%s"
    protocol     = %q
    headers_file = "otlp-headers"
  }
}
sandbox {
  plugin "otelplugin" {
    allow_net = [%q]
    env       = ["OTELPLUGIN_ENDPOINT"]
  }
}
hooks {
  hook "pass" {
    plugin = "hookplugin"
    on     = ["before_call"]
    match  = "item.name == 'work'"
  }
}
`, endpoint, protocol, sink.http)), 0o600); err != nil {
				t.Fatal(err)
			}
			pluginDir := t.TempDir()
			copyPlugin(t, "otelplugin", pluginDir, "otelplugin")
			copyPlugin(t, "hookplugin", pluginDir, "hookplugin")
			h := startTestHostIn(t, pluginDir, []string{"--config", cfg}, "OTELPLUGIN_ENDPOINT=http://"+sink.http)
			h.awaitTools("say", "work")

			const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			res, err := h.session.CallTool(ctx, &mcp.CallToolParams{Name: "work",
				Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + clientSpan + "-01"}})
			if err != nil || res.IsError {
				t.Fatalf("work: %v %v\nstderr:\n%s", text(res), err, h.stderr)
			}

			inTrace := func(name, kind string) func(sinkSpan) bool {
				return func(s sinkSpan) bool { return s.TraceID == traceID && s.Span == name && s.Kind == kind }
			}
			server := sink.await(t, "server span", inTrace("tools/call work", "Server"))
			if server.ParentSpanID != clientSpan {
				t.Errorf("the server span's parent is %q, want the client's span %s", server.ParentSpanID, clientSpan)
			}
			if server.Service != "plughost-e2e" {
				t.Errorf("service.name %q, want the block's plughost-e2e", server.Service)
			}
			for k, want := range map[string]any{"mcp.method.name": "tools/call", "gen_ai.tool.name": "work",
				"gen_ai.operation.name": "execute_tool", "network.transport": "pipe"} {
				if got := server.Attributes[k]; got != want {
					t.Errorf("server span %s = %v, want %v (attributes %v)", k, got, want, server.Attributes)
				}
			}
			if server.Attributes["jsonrpc.request.id"] == nil || server.Attributes["mcp.protocol.version"] != h.session.InitializeResult().ProtocolVersion {
				t.Errorf("server span without jsonrpc.request.id, or with another mcp.protocol.version than the session's: %v", server.Attributes)
			}
			route := sink.await(t, "routing span", inTrace("route work", "Internal"))
			if route.ParentSpanID != server.SpanID {
				t.Errorf("the routing span's parent is %q, want the server span %s", route.ParentSpanID, server.SpanID)
			}
			hook := sink.await(t, "hook span", inTrace("hook pass", "Internal"))
			if hook.ParentSpanID != route.SpanID || hook.Attributes["plughost.hook.decision"] != "pass" {
				t.Errorf("hook span %+v, want a child of the routing span %s that passed", hook, route.SpanID)
			}
			pcall := sink.await(t, "plugin call span", inTrace("tools/call work", "Client"))
			if pcall.ParentSpanID != route.SpanID || pcall.Attributes["plughost.provider"] != "otelplugin" {
				t.Errorf("plugin call span %+v, want a child of the routing span %s to otelplugin", pcall, route.SpanID)
			}
			if got, want := text(res), "traceparent=00-"+traceID+"-"+pcall.SpanID+"-01"; got != want {
				t.Errorf("the plugin got %q, want the plugin call span's context %q", got, want)
			}
			own := sink.await(t, "the plugin's own span", inTrace("otelplugin work", "Internal"))
			if own.ParentSpanID != pcall.SpanID || own.Service != "otelplugin" {
				t.Errorf("the plugin's span %+v, want a child of the plugin call span %s", own, pcall.SpanID)
			}

			h.close() // Stop flushes the meter: the metric arrives now, not a minute later
			sink.await(t, "mcp.server.operation.duration of the call", func(s sinkSpan) bool {
				for _, p := range s.Points {
					if s.Metric == "mcp.server.operation.duration" && p["mcp.method.name"] == "tools/call" && p["gen_ai.tool.name"] == "work" {
						return true
					}
				}
				return false
			})
		})
	}
}

// TestTracesToADeadCollector: with the collector's address closed, calls
// are answered as ever (the exporter's queue is bounded and drops), and
// the host still exits promptly, saying in its log that the flush failed.
func TestTracesToADeadCollector(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plughost.hcl")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("observability {\n  otlp {\n    endpoint = \"http://%s\"\n    timeout = \"1s\"\n  }\n}\n", freeAddr(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startTestHostWith(t, []string{"--config", cfg}, "echo")
	h.awaitTools("echo", "sleep")
	for i := range 50 {
		if res := h.call("echo", map[string]any{"text": fmt.Sprint(i)}); res.IsError {
			t.Fatalf("echo %d: %s", i, text(res))
		}
	}
	h.close() // fails the test if the host does not exit within 15 s
	if !strings.Contains(h.stderr.String(), "flushing the traces to the OTLP collector") {
		t.Errorf("the log does not say the flush failed:\n%s", h.stderr)
	}
}
