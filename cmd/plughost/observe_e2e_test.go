package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricsURL finds --metrics-listen's address in the log.
var metricsURL = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+/metrics)`)

// bearer adds a token to every request.
type bearer struct {
	base  http.RoundTripper
	token string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// TestServeObservability: a real serve --http with --metrics-listen and
// --audit-log, called by the go-sdk client. A scrape of /metrics (on the
// HTTP listener, with the token; on the metrics listener, without) shows
// the calls by tool, provider and outcome, their latency histogram, the
// plugins' states and starts, the session; the audit log has one line per
// call without arguments; a valid traceparent reaches the plugin and the
// host's log for the call, an invalid one is dropped.
func TestServeObservability(t *testing.T) {
	t.Parallel()
	const token = "s3cret-metrics"
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	h := startHTTPHostWith(t, []string{"--token", token, "--metrics-listen", "127.0.0.1:0", "--audit-log", auditPath}, "echo", "askplugin")
	hc := h.httpClient(nil)
	hc.Transport = bearer{hc.Transport, token}
	cs := h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: hc}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	call := func(name string, args map[string]any, meta mcp.Meta) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	}
	if res, err := call("echo", map[string]any{"text": "hi"}, mcp.Meta{"traceparent": parent}); err != nil || res.IsError {
		t.Fatalf("echo: %v %v", res, err)
	}
	if res, err := call("echo", map[string]any{}, nil); err != nil || !res.IsError {
		t.Fatalf("echo without text: %v %v, want an isError result", res, err)
	}
	if _, err := call("nope", nil, nil); err == nil {
		t.Fatal("an unknown tool answered")
	}
	res, err := call("trace", nil, mcp.Meta{"traceparent": parent, "tracestate": "rojo=00f067aa0ba902b7"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := text(res), "traceparent="+parent+" tracestate=rojo=00f067aa0ba902b7"; got != want {
		t.Errorf("the plugin got %q, want %q", got, want)
	}
	res, err = call("trace", nil, mcp.Meta{"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "tracestate": "a=b"})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "traceparent= tracestate=" {
		t.Errorf("an invalid traceparent reached the plugin: %q", got)
	}
	h.stderr.await(t, "trace_id=4bf92f3577b34da6a3ce929d0e0e4736")
	h.stderr.await(t, "dropped the request's trace context")

	// /metrics on the HTTP listener: the token is required.
	if resp, err := http.Get(h.base + "/metrics"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	fams := scrape(t, hc, h.base+"/metrics")
	m := metricsURL.FindStringSubmatch(h.stderr.String())
	if m == nil {
		t.Fatalf("no metrics URL in the log")
	}
	if own := scrape(t, http.DefaultClient, m[1]); own["plughost_tool_calls_total"] == nil {
		t.Errorf("--metrics-listen serves no plughost_tool_calls_total")
	}

	counter := func(labels map[string]string) float64 {
		for _, mt := range fams["plughost_tool_calls_total"].GetMetric() {
			if hasLabels(mt, labels) {
				return mt.GetCounter().GetValue()
			}
		}
		return -1
	}
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"tool": "echo", "provider": "echo", "outcome": "ok"}, 1},
		{map[string]string{"tool": "echo", "provider": "echo", "outcome": "invalid_arguments"}, 1},
		{map[string]string{"tool": "", "provider": "", "outcome": "unknown_tool"}, 1},
		{map[string]string{"tool": "trace", "provider": "askplugin", "outcome": "ok"}, 2},
	} {
		if got := counter(c.labels); got != c.want {
			t.Errorf("plughost_tool_calls_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	var histCount uint64
	for _, mt := range fams["plughost_tool_call_duration_seconds"].GetMetric() {
		if hasLabels(mt, map[string]string{"tool": "echo", "provider": "echo"}) {
			histCount = mt.GetHistogram().GetSampleCount()
		}
	}
	if histCount != 2 {
		t.Errorf("plughost_tool_call_duration_seconds{echo} count = %d, want 2", histCount)
	}
	gauge := func(name string, labels map[string]string) float64 {
		for _, mt := range fams[name].GetMetric() {
			if hasLabels(mt, labels) {
				return mt.GetGauge().GetValue()
			}
		}
		return -1
	}
	if got := gauge("plughost_plugins", map[string]string{"state": "running"}); got != 2 {
		t.Errorf("plughost_plugins{running} = %v, want 2", got)
	}
	if got := gauge("plughost_sessions", map[string]string{"transport": "streamable"}); got != 1 {
		t.Errorf("plughost_sessions{streamable} = %v, want 1", got)
	}
	for _, p := range []string{"echo", "askplugin"} {
		var starts float64
		for _, mt := range fams["plughost_plugin_starts_total"].GetMetric() {
			if hasLabels(mt, map[string]string{"plugin": p}) {
				starts = mt.GetCounter().GetValue()
			}
		}
		if starts < 1 {
			t.Errorf("plughost_plugin_starts_total{plugin=%q} = %v, want at least 1", p, starts)
		}
	}
	if fams["go_goroutines"] == nil || fams["process_resident_memory_bytes"] == nil {
		t.Errorf("the Go and process collectors are missing")
	}

	// The audit log: one line per call, without arguments.
	lines := auditLines(t, auditPath)
	if len(lines) != 5 {
		t.Fatalf("audit log has %d lines, want 5:\n%v", len(lines), lines)
	}
	first := lines[0]
	for k, want := range map[string]any{"tool": "echo", "provider": "echo", "outcome": "ok", "client": "plughost-e2e/1",
		"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "arguments_bytes": float64(len(`{"text":"hi"}`))} {
		if first[k] != want {
			t.Errorf("audit line %v: %s = %v, want %v", first, k, first[k], want)
		}
	}
	if s, _ := first["session"].(string); s == "" || first["remote"] == nil || first["time"] == nil || first["duration_ms"] == nil {
		t.Errorf("audit line %v: want session, remote, time and duration_ms", first)
	}
	for _, l := range lines {
		if _, ok := l["arguments"]; ok {
			t.Errorf("audit line %v carries arguments without --audit-arguments", l)
		}
	}
	if lines[2]["outcome"] != "unknown_tool" || lines[2]["provider"] != nil {
		t.Errorf("audit line of the unknown tool: %v", lines[2])
	}
}

// scrape GETs url and parses the Prometheus text format.
func scrape(t *testing.T, c *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: parsing: %v", url, err)
	}
	return fams
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// auditLines reads the audit log's JSON lines.
func auditLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st, _ := f.Stat(); st.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode %v, want 0600", st.Mode().Perm())
	}
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// In stdio mode, --metrics-listen serves the metrics: the stdio session
// and its calls are there.
func TestServeStdioMetrics(t *testing.T) {
	t.Parallel()
	h := startTestHostWith(t, []string{"--metrics-listen", "127.0.0.1:0"}, "echo")
	h.awaitTools("echo", "sleep")
	if got := text(h.call("echo", map[string]any{"text": "hi"})); got != "hi" {
		t.Fatalf("echo: %q", got)
	}
	h.stderr.await(t, "serving Prometheus metrics")
	m := metricsURL.FindStringSubmatch(h.stderr.String())
	if m == nil {
		t.Fatalf("no metrics URL in the log")
	}
	// A call is counted right after its response is written, before its
	// DEBUG line: once that is logged, a scrape finds it.
	h.stderr.await(t, "tool call: tool=echo provider=echo outcome=ok")
	fams := scrape(t, http.DefaultClient, m[1])
	var sessions, calls float64
	for _, mt := range fams["plughost_sessions"].GetMetric() {
		if hasLabels(mt, map[string]string{"transport": "stdio"}) {
			sessions = mt.GetGauge().GetValue()
		}
	}
	for _, mt := range fams["plughost_tool_calls_total"].GetMetric() {
		if hasLabels(mt, map[string]string{"tool": "echo", "provider": "echo", "outcome": "ok"}) {
			calls = mt.GetCounter().GetValue()
		}
	}
	if sessions != 1 || calls != 1 {
		t.Errorf("plughost_sessions{stdio} = %v, plughost_tool_calls_total{echo,ok} = %v; want 1 and 1", sessions, calls)
	}
}
