package metrics

import "github.com/prometheus/client_golang/prometheus"

// The results of a configuration reload, plughost_config_reloads_total's
// result label.
const (
	// ReloadApplied: the new configuration passed plughost check's checks
	// and is in force (what waits for the next start is logged).
	ReloadApplied = "applied"
	// ReloadRefused: the new configuration did not parse, compile or pass
	// the checks; the old one keeps serving, the log says why (file:line).
	ReloadRefused = "refused"
	// ReloadFailed: the new configuration was checked, but one of its
	// parts could not be applied (the log names it); the others were.
	ReloadFailed = "failed"
)

// newReloads makes the reloads' counter, every result at 0 from the
// start so that an alert on refused > 0 sees the series before the first.
func (m *Metrics) newReloads() *prometheus.CounterVec {
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plughost_config_reloads_total",
		Help: "Configuration reloads (SIGHUP, or a change of the --config file), by result (applied, refused, failed)."}, []string{"result"})
	for _, r := range []string{ReloadApplied, ReloadRefused, ReloadFailed} {
		m.reloads.WithLabelValues(r)
	}
	return m.reloads
}

// ConfigReloaded counts one reload by its result (one of the Reload…).
func (m *Metrics) ConfigReloaded(result string) { m.reloads.WithLabelValues(result).Inc() }
