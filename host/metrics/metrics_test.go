package metrics

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/streamable"
)

// Calls are counted by tool, provider and outcome, and timed; a call no
// provider served is counted without the client's name for it.
func TestCallEnd(t *testing.T) {
	t.Parallel()
	m := New(func() map[string]int { return map[string]int{"running": 2, "parked": 1} })
	m.CallEnd(&mcp.CallEnd{Tool: "echo", Provider: "echo", Outcome: mcp.OutcomeOK, Duration: 3 * time.Millisecond, ResultSize: 100})
	m.CallEnd(&mcp.CallEnd{Tool: "echo", Provider: "echo", Outcome: mcp.OutcomeToolError, Duration: time.Millisecond})
	m.CallEnd(&mcp.CallEnd{Tool: "made-up-by-a-client", Outcome: mcp.OutcomeUnknownTool})
	m.PluginStarted("echo")
	m.PluginCrashed("echo")
	m.PluginParked("echo")
	m.SandboxMissing([]string{"landlock", "seccomp"})
	m.Sessions("stdio", +1)
	m.LimitHit("sessions")
	m.AccessRefused("writes stay in /srv")
	m.AccessRefused("writes stay in /srv")
	m.HookDecided("secrets", "refuse")
	m.HookDecided("secrets", "pass")
	m.HookDecided("secrets", "pass")

	want := `
# HELP plughost_tool_calls_total tools/call requests that ended, by exposed tool name, provider and outcome (tool and provider are empty for a call no provider served).
# TYPE plughost_tool_calls_total counter
`
	var b strings.Builder
	b.WriteString(want)
	for _, o := range mcp.Outcomes {
		n := 0
		if o == mcp.OutcomeUnknownTool {
			n = 1
		}
		b.WriteString(`plughost_tool_calls_total{outcome="` + string(o) + `",provider="",tool=""} ` + strconv.Itoa(n) + "\n")
	}
	for _, o := range mcp.Outcomes {
		n := 0
		if o == mcp.OutcomeOK || o == mcp.OutcomeToolError {
			n = 1
		}
		b.WriteString(`plughost_tool_calls_total{outcome="` + string(o) + `",provider="echo",tool="echo"} ` + strconv.Itoa(n) + "\n")
	}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(b.String()), "plughost_tool_calls_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.duration); n != 2 {
		t.Errorf("duration series = %d, want 2 (echo, and the unrouted)", n)
	}
	for name, want := range map[string]string{
		"plughost_plugins":                     "plughost_plugins{state=\"parked\"} 1\nplughost_plugins{state=\"running\"} 2\n",
		"plughost_plugin_parked_total":         "plughost_plugin_parked_total{plugin=\"echo\"} 1\n",
		"plughost_sandbox_layer_missing_total": "plughost_sandbox_layer_missing_total{layer=\"landlock\"} 1\nplughost_sandbox_layer_missing_total{layer=\"seccomp\"} 1\n",
		"plughost_sessions":                    "plughost_sessions{transport=\"stdio\"} 1\n",
		"plughost_limit_hits_total":            "plughost_limit_hits_total{limit=\"sessions\"} 1\n",
		"plughost_access_refusals_total":       "plughost_access_refusals_total{rule=\"writes stay in /srv\"} 2\n",
		"plughost_hook_decisions_total":        "plughost_hook_decisions_total{decision=\"pass\",hook=\"secrets\"} 2\nplughost_hook_decisions_total{decision=\"refuse\",hook=\"secrets\"} 1\n",
	} {
		if got := scrapeOf(t, m, name); !strings.Contains(got, want) {
			t.Errorf("%s:\n%s\nwant:\n%s", name, got, want)
		}
	}
	if got := scrapeOf(t, m, "go_goroutines"); got == "" {
		t.Error("no go_goroutines: the Go collector is missing")
	}
}

// scrapeOf returns the lines of a scrape that start with name.
func scrapeOf(t *testing.T, m *Metrics, name string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var out strings.Builder
	for l := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			out.WriteString(l)
		}
	}
	return out.String()
}

// BenchmarkCallEnd is what recording one call costs (see also host/mcp's
// BenchmarkCallObserved, the whole round trip).
func BenchmarkCallEnd(b *testing.B) {
	m := New(nil)
	e := &mcp.CallEnd{Tool: "echo", Provider: "echo", Outcome: mcp.OutcomeOK, Duration: time.Millisecond, ResultSize: 100}
	b.ReportAllocs()
	for b.Loop() {
		m.CallEnd(e)
	}
}

// Metrics is the HTTP transport's Meter.
var _ streamable.Meter = (*Metrics)(nil)
