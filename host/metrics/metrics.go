// Package metrics is plughost's Prometheus instrumentation: one Metrics
// owns a registry of its own (never the client library's global default,
// so that nothing else linked into the binary adds series), with the Go
// runtime's and the process's collectors beside plughost's figures, and
// serves it in the Prometheus text format with Handler.
//
// The other packages do not import Prometheus: each reports through a
// small hook of its own, which Metrics implements and the command wires:
//
//   - host/mcp's Options.OnCallEnd: every tools/call (CallEnd);
//   - host/manager's Options.OnEvent: plugin starts, crashes, parking;
//   - host/mcp/streamable's Options.Meter: sessions, streams, limits hit;
//   - the sandbox's report at each start: layers missing (SandboxMissing);
//   - a func listing the plugins' states, read at each scrape (PluginStates).
//
// Calls reads the calls per tool back from the registry, with their
// failures and latency percentiles, for the console's calls page.
//
// Every label's values are bounded: tool and provider come from the
// catalog (a call the catalog did not route is labelled tool="" and
// provider=""), plugin from the plugin directory, outcome, state,
// transport, limit and layer from fixed sets.
//
// # Series
//
//	plughost_tool_calls_total{tool,provider,outcome}        counter
//	plughost_tool_call_duration_seconds{tool,provider}      histogram
//	plughost_tool_call_result_bytes{tool,provider}          histogram
//	plughost_plugins{state}                                 gauge, at scrape
//	plughost_plugin_starts_total{plugin}                    counter
//	plughost_plugin_crashes_total{plugin}                   counter
//	plughost_plugin_parked_total{plugin}                    counter
//	plughost_sandbox_layer_missing_total{layer}             counter, per plugin start
//	plughost_sessions{transport}                            gauge
//	plughost_http_streams                                   gauge
//	plughost_limit_hits_total{limit}                        counter
//	plughost_access_refusals_total{rule}                    counter
//	go_*, process_*                                         the runtime's and the process's
package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/plughost/plughost/host/mcp"
)

// Metrics holds plughost's collectors. Its methods are safe for
// concurrent use. Make it with New.
type Metrics struct {
	reg *prometheus.Registry

	calls     *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	results   *prometheus.HistogramVec
	starts    *prometheus.CounterVec
	crashes   *prometheus.CounterVec
	parked    *prometheus.CounterVec
	missing   *prometheus.CounterVec
	sessions  *prometheus.GaugeVec
	streams   prometheus.Gauge
	limitHits *prometheus.CounterVec
	refusals  *prometheus.CounterVec
	hooks     *prometheus.CounterVec
	reloads   *prometheus.CounterVec // reloads.go
	rate      rateMetrics            // ratelimit.go

	// series caches the label-bound collectors of a (tool, provider)
	// pair, so that a call costs map look-ups of its own, not the
	// client library's hashing of label values.
	mu     sync.RWMutex
	series map[[2]string]*callSeries
}

// callSeries are one (tool, provider)'s collectors.
type callSeries struct {
	duration, results prometheus.Observer
	outcomes          []prometheus.Counter // by outcomeIndex
}

// outcomeIndex numbers mcp.Outcomes, for callSeries.outcomes.
var outcomeIndex = func() map[mcp.Outcome]int {
	m := make(map[mcp.Outcome]int, 12)
	for i, o := range mcp.Outcomes {
		m[o] = i
	}
	return m
}()

// New returns Metrics with a fresh registry holding plughost's
// collectors, the Go runtime's and the process's. states, when not nil,
// is called at each scrape and returns how many plugins are in each state
// (host/manager's states); it must be quick.
func New(states func() map[string]int) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), series: map[[2]string]*callSeries{}}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plughost_tool_calls_total",
		Help: "tools/call requests that ended, by exposed tool name, provider and outcome (tool and provider are empty for a call no provider served)."},
		[]string{"tool", "provider", "outcome"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "plughost_tool_call_duration_seconds",
		Help:    "Time from a tools/call's arrival to its response (or cancellation; a task's end), by tool and provider.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}},
		[]string{"tool", "provider"})
	m.results = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "plughost_tool_call_result_bytes",
		Help:    "Size of a tools/call's result, by tool and provider.",
		Buckets: prometheus.ExponentialBuckets(256, 4, 9)}, // 256 B … 16 MiB
		[]string{"tool", "provider"})
	m.starts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plughost_plugin_starts_total",
		Help: "Plugin processes started (first start, restart after a crash, reload, lazy wake-up)."}, []string{"plugin"})
	m.crashes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plughost_plugin_crashes_total",
		Help: "Plugin deaths and failed restarts that count towards parking."}, []string{"plugin"})
	m.parked = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plughost_plugin_parked_total",
		Help: "Times a plugin was parked for crashing too often (it stays down until its file changes)."}, []string{"plugin"})
	m.missing = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plughost_sandbox_layer_missing_total",
		Help: "Plugin starts without one of the sandbox's layers, by layer (see plughost sandbox probe)."}, []string{"layer"})
	m.sessions = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "plughost_sessions",
		Help: "MCP sessions open, by transport (stdio, streamable, sse)."}, []string{"transport"})
	m.streams = prometheus.NewGauge(prometheus.GaugeOpts{Name: "plughost_http_streams",
		Help: "Server-sent event streams open on HTTP (sessions' GET streams and HTTP+SSE sessions' streams)."})
	m.limitHits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plughost_limit_hits_total",
		Help: "Requests refused (and notifications dropped) at a limit, by limit."}, []string{"limit"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plughost_access_refusals_total",
		Help: "Calls, reads and prompt gets an access rule refused, by rule (\"(no allow rule)\" when none admitted them)."}, []string{"rule"})
	m.hooks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plughost_hook_decisions_total",
		Help: "Decisions of the configured hooks, by hook and decision (pass, refuse, rewrite, hide, error, timeout, would_refuse, would_rewrite, would_hide)."}, []string{"hook", "decision"})
	m.reg.MustRegister(m.calls, m.duration, m.results, m.starts, m.crashes, m.parked, m.missing, m.sessions, m.streams,
		m.limitHits, m.refusals, m.hooks, m.newReloads(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registerRateLimits()
	if states != nil {
		m.reg.MustRegister(&stateCollector{states: states, desc: prometheus.NewDesc("plughost_plugins",
			"Plugins by state (loading, running, restarting, parked, failed, idle, refused).", []string{"state"}, nil)})
	}
	return m
}

// Handler serves the registry in the Prometheus exposition formats
// (text, or OpenMetrics when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// Registry returns the registry, for tests and for a caller that adds
// collectors of its own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// CallEnd records a tools/call: it is host/mcp's Options.OnCallEnd.
func (m *Metrics) CallEnd(e *mcp.CallEnd) {
	tool, provider := e.Tool, e.Provider
	if provider == "" {
		tool = "" // a name no provider serves is the client's choice: unbounded
	}
	s := m.seriesOf(tool, provider)
	if i, ok := outcomeIndex[e.Outcome]; ok {
		s.outcomes[i].Inc()
	}
	s.duration.Observe(e.Duration.Seconds())
	if e.ResultSize > 0 {
		s.results.Observe(float64(e.ResultSize))
	}
	if e.DroppedNotifications > 0 {
		m.limitHits.WithLabelValues(LimitNotifications).Add(float64(e.DroppedNotifications))
	}
}

// LimitNotifications is the limit label of the notifications dropped past
// limits { notification_rate } (counted per notification).
const LimitNotifications = "notifications"

// seriesOf returns (and makes, the first time) the collectors of a
// (tool, provider) pair.
func (m *Metrics) seriesOf(tool, provider string) *callSeries {
	k := [2]string{tool, provider}
	m.mu.RLock()
	s := m.series[k]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.series[k]; s != nil {
		return s
	}
	s = &callSeries{duration: m.duration.WithLabelValues(tool, provider), results: m.results.WithLabelValues(tool, provider),
		outcomes: make([]prometheus.Counter, len(mcp.Outcomes))}
	for i, o := range mcp.Outcomes {
		s.outcomes[i] = m.calls.WithLabelValues(tool, provider, string(o))
	}
	m.series[k] = s
	return s
}

// PluginStarted, PluginCrashed and PluginParked count a plugin's life
// events (host/manager's Options.OnEvent calls them).
func (m *Metrics) PluginStarted(plugin string) { m.starts.WithLabelValues(plugin).Inc() }

// PluginCrashed counts a death or failed restart of plugin.
func (m *Metrics) PluginCrashed(plugin string) { m.crashes.WithLabelValues(plugin).Inc() }

// PluginParked counts plugin being parked.
func (m *Metrics) PluginParked(plugin string) { m.parked.WithLabelValues(plugin).Inc() }

// SandboxMissing counts a plugin start without each of layers.
func (m *Metrics) SandboxMissing(layers []string) {
	for _, l := range layers {
		m.missing.WithLabelValues(l).Inc()
	}
}

// Sessions adds delta (+1 opened, -1 ended) to the sessions of transport.
func (m *Metrics) Sessions(transport string, delta int) {
	m.sessions.WithLabelValues(transport).Add(float64(delta))
}

// Streams adds delta to the open HTTP event streams.
func (m *Metrics) Streams(delta int) { m.streams.Add(float64(delta)) }

// LimitHit counts a request refused at limit.
func (m *Metrics) LimitHit(limit string) { m.limitHits.WithLabelValues(limit).Inc() }

// AccessRefused counts a use an access rule refused (access.Rules.OnRefuse).
func (m *Metrics) AccessRefused(rule string) { m.refusals.WithLabelValues(rule).Inc() }

// HookDecided counts one decision of a hook (host/hooks): both labels are
// the configuration's and the hooks package's, a bounded set; no caller.
func (m *Metrics) HookDecided(hook, decision string) { m.hooks.WithLabelValues(hook, decision).Inc() }

// stateCollector reports plugins by state at each scrape.
type stateCollector struct {
	states func() map[string]int
	desc   *prometheus.Desc
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for state, n := range c.states() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), state)
	}
}
