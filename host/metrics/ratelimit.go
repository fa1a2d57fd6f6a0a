package metrics

import "github.com/prometheus/client_golang/prometheus"

// rateMetrics count the refusals of the per-caller rate limits (issue 35;
// host/ratelimit). Their labels are the configuration's rule names and
// the limits' names, a bounded set: never the caller, whom the audit log
// names.
type rateMetrics struct {
	limited     *prometheus.CounterVec
	storeErrors prometheus.Counter
}

// registerRateLimits makes and registers m's rate limit counters.
func (m *Metrics) registerRateLimits() {
	m.rate.limited = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plughost_rate_limited_total",
		Help: "Requests refused over a caller's rate limits, by rule (\"caller\" for the caller block) and limit (rate, calls_per_day, tool_rate, tool_calls_per_day)."},
		[]string{"rule", "limit"})
	m.rate.storeErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "plughost_rate_limit_store_errors_total",
		Help: "Requests weighed in this replica's memory because the Redis the replicas share their rate limits in did not answer."})
	m.reg.MustRegister(m.rate.limited, m.rate.storeErrors)
}

// RateLimited counts a request refused over limit of rule.
func (m *Metrics) RateLimited(rule, limit string) { m.rate.limited.WithLabelValues(rule, limit).Inc() }

// RateLimitStoreError counts a request weighed in memory because Redis
// failed.
func (m *Metrics) RateLimitStoreError() { m.rate.storeErrors.Inc() }
