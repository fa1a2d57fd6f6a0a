package streamable

import (
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// Extra endpoints (Options.Endpoints): each is an httpHandler of its own
// (its server, its sessions, its shutdown) that the root handler routes to
// after its guards; the limits on sessions and stateless requests are the
// root's.

// ErrEndpointPath is returned (wrapped) by [Options.Check] and [Serve]
// for a path of Options.Endpoints that cannot be served.
var ErrEndpointPath = errors.New("invalid endpoint path")

// checkEndpoint reports whether an extra endpoint may be served at p.
func checkEndpoint(p string) error {
	switch {
	case !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" || strings.ContainsAny(p, "?#%"):
		return fmt.Errorf("%w %q: want an absolute, clean path of its own, such as /mcp/search", ErrEndpointPath, p)
	case p == PathMCP || p == PathSSE || p == PathMessage || p == PathMetrics || isHealthPath(p) || isConsolePath(p):
		return fmt.Errorf("%w %q: served already (the listener serves %s, %s, %s, %s, %s, %s and %s)", ErrEndpointPath, p,
			PathMCP, PathSSE, PathMessage, PathMetrics, PathHealthz, PathReadyz, PathConsole)
	}
	return nil
}

// addEndpoints makes the handlers of h's Options.Endpoints, with h's
// options (defaults filled in) and limits.
func (h *httpHandler) addEndpoints(loopback bool) {
	for p, esrv := range h.opts.Endpoints {
		eo := h.opts
		eo.Endpoints = nil
		e := newHTTPHandler(esrv, &eo, loopback)
		e.statelessSlots, e.root = h.statelessSlots, h
		if h.extra == nil {
			h.extra = map[string]*httpHandler{}
		}
		h.extra[p] = e
	}
}

// serveMCP serves a request of the Streamable HTTP endpoint, past the
// guards.
func (h *httpHandler) serveMCP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		h.get(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest, "method not allowed: use POST, GET or DELETE")
	}
}

// openSessions counts the sessions of both transports, at every endpoint.
// (Sessions are admitted under the root's admitMu: see admit.go.)
func (h *httpHandler) openSessions() int {
	root := h
	if h.root != nil {
		root = h.root
	}
	n := root.ownSessions()
	for _, e := range root.extra {
		n += e.ownSessions()
	}
	return n
}

// ownSessions counts the sessions of h's own endpoint.
func (h *httpHandler) ownSessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions) + len(h.legacy)
}
