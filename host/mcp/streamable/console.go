package streamable

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The console (host/console: plughost's pages in a browser) is served at
// PathConsole and every path under it, by Options.Console on the MCP
// listener or by ServeConsole on a listener of its own. Its requests pass
// the guards every request passes first (Host on loopback: DNS rebinding),
// and then their own:
//
//   - Origin, when a browser sends one, must be the request's own origin
//     (or Options.ConsoleOrigin, behind a proxy that changes the Host):
//     the --allowed-origin list is for MCP clients in a page of another
//     origin (the MCP Inspector), which must never drive the console, and
//     its answers carry no CORS headers, so no other origin's script
//     reads a page;
//   - no bearer token: a browser sends the console's session cookie, which
//     the console checks itself (with a CSRF token on every POST);
//   - while the server shuts down, 503 as elsewhere; and a console request
//     (a page's event stream, above all) ends as the shutdown begins, so it
//     never holds the grace period the calls in flight have.

// PathConsole is where Options.Console is served: the path and every path
// under it (host/console's Path).
const PathConsole = "/console"

// ErrConsoleNotLoopback is returned (wrapped) by ServeConsole for a
// listener reachable beyond loopback.
var ErrConsoleNotLoopback = errors.New("the console's own listener must be on loopback")

// isConsolePath reports whether p is the console's.
func isConsolePath(p string) bool {
	return p == PathConsole || strings.HasPrefix(p, PathConsole+"/")
}

// consoleGate holds what a console request needs past the Host guard.
type consoleGate struct {
	console http.Handler
	// closing ends when the shutdown begins: every console request's
	// context ends with it.
	closing       context.Context
	closeRequests context.CancelFunc
	draining      func() bool
	// public is Options.ConsoleOrigin, normalized; "" for none.
	public string
}

func newConsoleGate(console http.Handler, public string, draining func() bool) *consoleGate {
	g := &consoleGate{console: console, draining: draining}
	if public != "" {
		g.public = normalizeOrigin(public)
	}
	g.closing, g.closeRequests = context.WithCancel(context.Background())
	return g
}

// serve answers a console request whose Host has passed: its Origin,
// draining, then the console with a context that ends at shutdown.
func (g *consoleGate) serve(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) && (g.public == "" || normalizeOrigin(o) != g.public) {
		http.Error(w, "forbidden: Origin "+strconv.Quote(o)+" is not this console's own origin: the console answers only its own pages", http.StatusForbidden)
		return
	}
	if g.draining() {
		w.Header().Set("Connection", "close")
		http.Error(w, "service unavailable: the server is shutting down", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(g.closing, cancel)()
	g.console.ServeHTTP(w, r.WithContext(ctx))
}

// sameOrigin reports whether origin (a browser's Origin header) is the
// origin of a request to host: an http or https URL of that host and port.
// "null" (an opaque origin: a sandboxed frame, a file) is not.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Path == "" && u.Host != "" && strings.EqualFold(u.Host, host)
}

// ServeConsole serves console alone on ln (plughost serve
// --console-listen, beside stdio or another listener) until ctx ends: at
// PathConsole and under it ("/" is sent there), behind the guards the MCP
// listener puts before it (see PathConsole). ln must be on loopback: the
// console lets its user approve code to run, and a login link is printed
// for it. tlsConfig, when not nil, makes it speak HTTPS. ln is closed on
// return.
func ServeConsole(ctx context.Context, ln net.Listener, console http.Handler, tlsConfig *tls.Config, log hclog.Logger) error {
	if !isLoopbackAddr(ln.Addr()) {
		ln.Close()
		return fmt.Errorf("%w: %s is reachable from other machines; listen on 127.0.0.1 or [::1] (the console of an HTTP host is served on --http's listener, behind its authorization)",
			ErrConsoleNotLoopback, ln.Addr())
	}
	var draining atomic.Bool
	g := newConsoleGate(console, "", draining.Load)
	hs := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "forbidden: Host "+strconv.Quote(r.Host)+" is not a loopback name (DNS rebinding protection)", http.StatusForbidden)
			return
		}
		switch {
		case isConsolePath(r.URL.Path):
			g.serve(w, r)
		case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			http.Redirect(w, r, PathConsole+"/", http.StatusSeeOther)
		default:
			http.Error(w, "not found: this listener serves the console only, at "+PathConsole, http.StatusNotFound)
		}
	}), log)
	ln = withTLS(ln, tlsConfig)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		g.closeRequests()
		return fmt.Errorf("console: http: %w", err)
	case <-ctx.Done():
	}
	draining.Store(true)
	g.closeRequests()
	grace, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(grace); err != nil {
		hs.Close()
	}
	<-served
	return nil
}
