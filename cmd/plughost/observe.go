package main

import (
	"crypto/tls"
	"errors"
	"flag"
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
)

// observeFlags are serve's flags for what operators watch: metrics on a
// listener of their own, and the audit log. (With --http, metrics are
// also at /metrics on the HTTP listener, behind its token.)
type observeFlags struct {
	metricsListen string
	metricsPublic bool
	auditLog      string
	auditArgs     bool
}

func (f *observeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.metricsListen, "metrics-listen", "", "serve Prometheus metrics at http://ADDR/metrics (https:// with --tls-cert), without a token "+
		"(e.g. 127.0.0.1:9464; beyond loopback only with --metrics-public); with --http they are also at /metrics behind --token")
	fs.BoolVar(&f.metricsPublic, "metrics-public", false, "let --metrics-listen listen beyond loopback (metrics name tools, plugins and figures; no secrets)")
	fs.StringVar(&f.auditLog, "audit-log", "", "append one JSON line per tool call to FILE (created 0600; - for stderr; "+
		"wins over an audit block in --config); see README \"Operating plughost\"")
	fs.BoolVar(&f.auditArgs, "audit-arguments", false, "include each call's arguments in the audit log (cut beyond 4 KiB)")
}

// observer is what serve wires for operators: the metrics (nil when off:
// neither --http nor --metrics-listen) and the audit log (nil when off).
type observer struct {
	metrics *metrics.Metrics
	audit   *audit.Log
	// plugins returns the manager's plugins, set once it exists (the
	// metrics read the states at each scrape, never before).
	plugins func() []manager.PluginStatus
}

// newObserver opens what f and the configuration's audit block (nil:
// none) ask for; the flags win over the block. withHTTP: serve --http,
// whose listener serves /metrics.
func newObserver(f *observeFlags, block *config.Audit, withHTTP bool, log hclog.Logger) (*observer, error) {
	o := &observer{}
	if f == nil {
		return o, nil
	}
	if f.metricsListen != "" && !f.metricsPublic && !loopback(f.metricsListen) {
		return nil, fmt.Errorf("--metrics-listen %s is reachable from other machines: listen on loopback (127.0.0.1:PORT), "+
			"or add --metrics-public to serve metrics there without a token", f.metricsListen)
	}
	file, args := f.auditLog, f.auditArgs
	if block != nil && file == "" {
		file, args = block.File, args || block.Arguments
	}
	if args && file == "" {
		return nil, errors.New("--audit-arguments needs --audit-log FILE (or an audit block in --config)")
	}
	if withHTTP || f.metricsListen != "" {
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

// managerEvent is manager.Options.OnEvent; nil without metrics.
func (o *observer) managerEvent() func(string, manager.Event) {
	if o.metrics == nil {
		return nil
	}
	return func(plugin string, e manager.Event) {
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

// sandboxMissing counts a plugin start without some layers; nil
// without metrics.
func (o *observer) sandboxMissing() func([]string) {
	if o.metrics == nil {
		return nil
	}
	return o.metrics.SandboxMissing
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
func (o *observer) serveMetrics(f *observeFlags, cfg *tls.Config, log hclog.Logger) (stop func(), err error) {
	if f == nil || f.metricsListen == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", f.metricsListen)
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
