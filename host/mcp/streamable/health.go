package streamable

import (
	"errors"
	"net/http"
	"strings"
	"time"
)

// Health endpoints, for load balancers and Kubernetes probes. They need no
// token (they reveal nothing but "up" and "ready") but pass the Host and
// Origin guards like every other path; anything but GET and HEAD gets 405.
const (
	// PathHealthz answers 200 "ok" for as long as the process serves
	// HTTP, shutdown included: a liveness probe.
	PathHealthz = "/healthz"
	// PathReadyz answers 200 "ready" once [Options.Ready] says so, and
	// 503 with a one-line reason before that and from the moment ctx ends
	// (see [Options.DrainDelay]): a readiness probe.
	PathReadyz = "/readyz"
)

// errShuttingDown is /readyz's reason from the moment Serve's ctx ends.
var errShuttingDown = errors.New("shutting down")

// isHealthPath reports whether path is one of the health endpoints.
func isHealthPath(path string) bool { return path == PathHealthz || path == PathReadyz }

// serveHealth answers GET or HEAD of PathHealthz or PathReadyz, after the
// Host and Origin guards and before the token check.
func (h *httpHandler) serveHealth(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Type", "text/plain; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		w.WriteHeader(http.StatusMethodNotAllowed)
		w.Write([]byte("method not allowed: use GET or HEAD\n"))
		return
	}
	if r.URL.Path == PathHealthz {
		w.Write([]byte("ok\n"))
		return
	}
	if err := h.readiness(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("not ready: " + oneLine(err.Error()) + "\n"))
		return
	}
	w.Write([]byte("ready\n"))
}

// readiness is nil when the server is ready to serve calls: not shutting
// down, and Options.Ready (when set) says so.
func (h *httpHandler) readiness() error {
	if h.unready.Load() || h.draining.Load() {
		return errShuttingDown
	}
	if h.opts.Ready != nil {
		return h.opts.Ready()
	}
	return nil
}

// drain begins the shutdown as Serve's ctx ends: /readyz answers 503 from
// now on, and for DrainDelay everything else is served as before, so that
// load balancers (and Kubernetes, which stops routing to a pod that is
// terminating or unready) stop sending requests before the listener
// closes.
func (h *httpHandler) drain() {
	h.unready.Store(true)
	if d := h.opts.DrainDelay; d > 0 {
		h.log.Info("draining: "+PathReadyz+" answers 503 while requests are still served, then the server shuts down", "delay", d)
		time.Sleep(d)
	}
}

// oneLine folds a multi-line reason into one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}
