package serve

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/audit"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/metrics"
	"github.com/plughost/plughost/sandbox"
)

// observer is what serve wires for operators: the metrics (nil when off:
// neither --http nor --metrics-listen) and the audit log (nil when off).
type observer struct {
	metrics *metrics.Metrics
	audit   *audit.Log
	// plugins returns the manager's plugins, set once it exists (the
	// metrics read the states at each scrape, never before).
	plugins func() []manager.PluginStatus
	// events are the plugins' changes the console shows live
	// (console_events.go).
	events pluginEvents
	// missing are the sandbox layers each plugin's last start went
	// without, for the console.
	missing missingLayers
}

// newObserver opens what f and the configuration's audit block (nil:
// none) ask for; the flags win over the block. withHTTP: serve --http,
// whose listener serves /metrics, or a console, whose calls page shows
// them.
func newObserver(f *ObserveOptions, block *config.Audit, withHTTP bool, log hclog.Logger) (*observer, error) {
	o := &observer{}
	if f == nil {
		return o, nil
	}
	if f.MetricsListen != "" && !f.MetricsPublic && !loopback(f.MetricsListen) {
		return nil, fmt.Errorf("--metrics-listen %s is reachable from other machines: listen on loopback (127.0.0.1:PORT), "+
			"or add --metrics-public to serve metrics there without a token", f.MetricsListen)
	}
	file, args := f.AuditLog, f.AuditArgs
	if block != nil && file == "" {
		file, args = block.File, args || block.Arguments
	}
	if args && file == "" {
		return nil, errors.New("--audit-arguments needs --audit-log FILE (or an audit block in --config)")
	}
	if withHTTP || f.MetricsListen != "" {
		o.metrics = metrics.New(o.states)
	}
	if file != "" {
		a, err := audit.Open(file, &audit.Options{Arguments: args, Logger: log.Named("audit")})
		if err != nil {
			return nil, err
		}
		o.audit = a
	}
	return o, nil
}

// states counts the plugins by state, for the metrics.
func (o *observer) states() map[string]int {
	n := map[string]int{}
	if o.plugins == nil {
		return n
	}
	for _, st := range o.plugins() {
		n[string(st.State)]++
	}
	return n
}

// managerEvent is manager.Options.OnEvent: the metrics' counts (when
// on) and the console's live events.
func (o *observer) managerEvent() func(string, manager.Event) {
	return func(plugin string, e manager.Event) {
		o.events.send(lifeEvent(plugin, e))
		if o.metrics == nil {
			return
		}
		switch e {
		case manager.EventStarted:
			o.metrics.PluginStarted(plugin)
		case manager.EventCrashed:
			o.metrics.PluginCrashed(plugin)
		case manager.EventParked:
			o.metrics.PluginParked(plugin)
		}
	}
}

// sandboxMissing learns of the layers a plugin's start went without:
// the metrics count them (when on), the console shows them
// (console_events.go's missingLayers).
func (o *observer) sandboxMissing() func(string, map[sandbox.Layer]string) {
	return func(plugin string, missing map[sandbox.Layer]string) {
		o.missing.set(plugin, missing)
		if o.metrics != nil && len(missing) > 0 {
			names := make([]string, 0, len(missing))
			for l := range missing {
				names = append(names, string(l))
			}
			o.metrics.SandboxMissing(names)
		}
	}
}

// onLimit is mcp.Options.OnLimit: the metrics' limit hits; nil without
// metrics.
func (o *observer) onLimit() func(string) {
	if o.metrics == nil {
		return nil
	}
	return o.metrics.LimitHit
}

// onCallEnd is mcp.Options.OnCallEnd: the metrics and the audit log,
// whichever are on; nil when neither is.
func (o *observer) onCallEnd() func(*mcp.CallEnd) {
	switch {
	case o.metrics != nil && o.audit != nil:
		return func(e *mcp.CallEnd) { o.metrics.CallEnd(e); o.audit.CallEnd(e) }
	case o.metrics != nil:
		return o.metrics.CallEnd
	case o.audit != nil:
		return o.audit.CallEnd
	}
	return nil
}

// serveMetrics serves the metrics on --metrics-listen until the returned
// func is called, once serve has stopped everything else (so that a scrape
// sees the shutdown through); it does nothing without the flag. cfg, when
// not nil, is --tls-cert's: the metrics are served over HTTPS.
func (o *observer) serveMetrics(f *ObserveOptions, cfg *tls.Config, log hclog.Logger) (stop func(), err error) {
	if f == nil || f.MetricsListen == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", f.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	scheme := "http"
	if cfg != nil { // --tls-cert: HTTPS as well (HTTP/1.1, as plain)
		ln, scheme = tls.NewListener(ln, cfg), "https"
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", o.metrics.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener failed", "error", err)
		}
	}()
	log.Info("serving Prometheus metrics", "url", scheme+"://"+ln.Addr().String()+"/metrics")
	return func() { hs.Close(); <-done }, nil
}

// close closes the audit log.
func (o *observer) close() {
	if o.audit != nil {
		o.audit.Close()
	}
}
