package streamable

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/time/rate"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/oauth"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Options configure [Serve]. The zero value (or nil) means defaults,
// which suit a server on loopback.
type Options struct {
	// Token, when not empty, is the bearer token every request must carry
	// (Authorization: Bearer TOKEN); a request without it gets 401. A
	// listener reachable beyond loopback requires one (see Check).
	Token string
	// OAuth, when not nil, makes the server an OAuth resource server
	// (auth.go): every request but the health checks and the Protected
	// Resource Metadata (served at oauth.WellKnownPrefix, alone and
	// followed by PathMCP) needs an access token the Verifier accepts, and
	// a session stays its caller's: another caller's request on it gets
	// 403. The Endpoints share PathMCP's resource and metadata. With Token set too, either is
	// accepted (the static token for a simple client, a metrics scraper).
	OAuth *oauth.Verifier
	// AllowedOrigins lists the Origin values (scheme://host[:port]) browsers
	// may send besides the server's own origin; "*" allows any. A request
	// whose Origin is present and not allowed gets 403.
	AllowedOrigins []string
	// MaxBodySize limits a POSTed body, in bytes; 0 means
	// mcp.DefaultMaxMessageSize (4 MiB). A longer body gets 413.
	MaxBodySize int64
	// BodyTimeout bounds reading one POSTed body (at /mcp and the legacy
	// /message), from the moment the handler starts reading it; 0 means
	// DefaultBodyTimeout (30s). A body not in by then gets 408 and its
	// connection is closed, however it trickles. Streams (a GET, a POST's
	// SSE response) have no read deadline once the body is in.
	BodyTimeout time.Duration
	// IdleTimeout ends a Streamable HTTP session that has had no request and
	// no open stream for this long; 0 means 30 minutes. Its id then gets 404.
	IdleTimeout time.Duration
	// RateLimit is the requests per second one session may send; 0 means
	// 100, a negative value means no limit. Excess requests get HTTP 429
	// and a JSON-RPC error saying when to retry. Notifications (such as
	// cancellations) and responses are never limited.
	RateLimit float64
	// RateBurst is how many requests a session may send at once above
	// RateLimit; 0 means twice RateLimit (at least 1).
	RateBurst int
	// ReplayEvents and ReplayBytes bound the events each session keeps for
	// a client resuming a stream with Last-Event-ID; 0 means 256 events and
	// 4 MiB. The newest event is always kept.
	ReplayEvents int
	ReplayBytes  int
	// ReplayBudget bounds the events kept by every session together, in
	// bytes; 0 means 256 MiB. Over it, a session recording an event drops
	// its own oldest first; a client resuming after a dropped event gets
	// what is left, and the loss is logged.
	ReplayBudget int64
	// MaxSessions limits the sessions open at once (both transports); 0
	// means 1000. When they are open, a new session evicts the least
	// recently used idle one, whose next request gets 404 saying so;
	// when all are busy (a request in flight, a stream open), initialize
	// gets 503. See admit.go.
	MaxSessions int
	// KeepAlive is the interval of SSE comments on an otherwise quiet
	// stream, so proxies keep it open; 0 means 25 seconds, negative none.
	KeepAlive time.Duration
	// ShutdownTimeout is how long calls in flight may run once ctx ends
	// before they are cancelled; 0 means 10 seconds.
	ShutdownTimeout time.Duration
	// MaxStatelessRequests limits the stateless (2026-07-28) requests
	// served at once, subscriptions/listen streams included; 0 means
	// 4096. One more gets 503 with Retry-After.
	MaxStatelessRequests int
	// Ready, when not nil, says whether the host is ready to serve calls
	// (its plugins loaded, say): nil when it is, else why not, which GET
	// [PathReadyz] answers in one line with 503. It is called once per
	// such request and must be quick. nil means ready from the start.
	Ready func() error
	// DrainDelay is how long, once ctx ends, the server goes on serving
	// as before while [PathReadyz] answers 503, so that load balancers
	// stop sending it requests before it stops accepting them; the
	// graceful shutdown (ShutdownTimeout) follows. 0 means none.
	DrainDelay time.Duration
	// Finish, when not nil, is work beyond the HTTP requests that the
	// graceful shutdown lets end within the same ShutdownTimeout: Serve
	// calls it with the grace period's context as the shutdown begins,
	// beside the calls in flight, and returns once it has returned. serve
	// passes the tasks' Drain, so that a task running in the background
	// on a replica being stopped completes rather than fails.
	Finish func(grace context.Context)
	// Endpoints serves more MCP servers over the same listener, each at
	// its path (say, a server in tool search mode at "/mcp/search",
	// beside the one [Serve] is given at [PathMCP]): the Streamable HTTP
	// transport alone, behind the same guards (Host, Origin, Token) and
	// limits. A session belongs to the endpoint that opened it; its id is
	// unknown (404) at another. MaxSessions and MaxStatelessRequests
	// bound all the endpoints together. A path must be absolute, clean
	// and none that Serve serves by itself (see Check).
	Endpoints map[string]*mcp.Server
	// Meter, when not nil, learns of sessions, streams and limits hit,
	// for metrics.
	Meter Meter
	// Metrics, when not nil, is served at [PathMetrics] (GET), behind the
	// same Host, Origin and token checks as [PathMCP]: a Prometheus
	// scraper sends the token (authorization.credentials_file). A scraper
	// that cannot is given a listener of its own (plughost serve
	// --metrics-listen).
	//
	// Metrics name every tool and count every caller's calls, so a caller
	// with an OAuth token reads them only when MetricsAllowed says so
	// (403 otherwise); the static token (the operator's, a scraper's) and
	// a listener without credentials (loopback, where every caller may
	// call every tool) read them.
	Metrics http.Handler
	// MetricsAllowed decides whether an OAuth caller may read Metrics;
	// nil means none may.
	MetricsAllowed func(*mcp.Caller) bool
	// Console, when not nil, is served at [PathConsole] and every path
	// under it (host/console's pages): after the Host guard, with an
	// Origin guard of its own (a browser's Origin must be the listener's
	// own origin; --allowed-origin does not apply) and without the bearer
	// token, since a browser signs in with a cookie the console checks.
	// See console.go.
	Console http.Handler
	// ConsoleOrigin is the origin browsers reach the console by when a
	// proxy in front changes the Host (the console block's public_url):
	// an Origin equal to it is the console's own too. "": the request's
	// Host alone.
	ConsoleOrigin string
	// TLSConfig, when not nil, makes Serve speak HTTPS on its listener
	// with it (HTTP/1.1, as over plain HTTP): a token then never travels
	// in clear. The handshake is bounded as a request's headers are; a
	// client speaking plain HTTP to it gets 400 "Client sent an HTTP
	// request to an HTTPS server". Nil: plain HTTP.
	TLSConfig *tls.Config
}

// ErrTokenRequired is returned (wrapped) by [Options.Check] and
// [Serve] for a listener reachable beyond loopback
// when no token is configured.
var ErrTokenRequired = errors.New("a token is required")

// Check reports whether the options may serve on addr: a listener
// reachable from other machines needs a Token, since whoever reaches it can
// run every tool. o may be nil.
func (o *Options) Check(addr net.Addr) error {
	if o != nil {
		for p := range o.Endpoints {
			if err := checkEndpoint(p); err != nil {
				return err
			}
		}
	}
	if (o != nil && (o.Token != "" || o.OAuth != nil)) || isLoopbackAddr(addr) {
		return nil
	}
	return fmt.Errorf("%w: %s is reachable from other machines and anyone who reaches it could run every tool; "+
		"set a bearer token (--token), configure OAuth (an auth block) or listen on loopback (127.0.0.1)", ErrTokenRequired, addr)
}

// isLoopbackAddr reports whether addr accepts only local connections: a
// loopback TCP address or a unix socket.
func isLoopbackAddr(addr net.Addr) bool {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

// Paths served by [Serve].
const (
	// PathMCP is the Streamable HTTP endpoint (POST, GET, DELETE).
	PathMCP = "/mcp"
	// PathSSE opens a session of the deprecated HTTP+SSE transport.
	PathSSE = "/sse"
	// PathMessage takes the POSTs of HTTP+SSE sessions (?sessionId=ID).
	PathMessage = "/message"
	// PathMetrics serves Options.Metrics, when set.
	PathMetrics = "/metrics"
)

// Serve serves srv's MCP sessions over HTTP on ln until ctx ends: the
// Streamable HTTP transport at [PathMCP], and for 2024-11-05 clients the
// deprecated HTTP+SSE transport at [PathSSE] and [PathMessage]; and the
// health endpoints [PathHealthz] and [PathReadyz]; and the servers of
// [Options.Endpoints] at their paths. It refuses to start (see
// [Options.Check]) on a listener reachable beyond loopback without a
// token, or with an endpoint at a path it cannot serve.
//
// When ctx ends, /readyz answers 503 and, after DrainDelay, it shuts down
// gracefully: it stops accepting connections
// and requests (503), lets the calls in flight finish for up to
// ShutdownTimeout and deliver their responses, cancels the rest, closes
// every stream and session, and returns nil. ln is closed on return.
func Serve(ctx context.Context, srv *mcp.Server, ln net.Listener, opts *Options) error {
	if err := opts.Check(ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	h := newHTTPHandler(srv, opts, isLoopbackAddr(ln.Addr()))
	hs := newHTTPServer(h, h.log)
	if opts != nil {
		ln = withTLS(ln, opts.TLSConfig)
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		if h.console != nil {
			h.console.closeRequests()
		}
		h.shutdown(context.Background())
		return fmt.Errorf("mcp: http: %w", err)
	case <-ctx.Done():
	}
	h.drain() // health.go: /readyz answers 503 from now on
	if h.console != nil {
		h.console.closeRequests() // a console page's event stream ends now, not at the grace period's end
	}
	h.log.Info("shutting down HTTP", "grace", h.opts.ShutdownTimeout)
	grace, cancel := context.WithTimeout(context.Background(), h.opts.ShutdownTimeout)
	defer cancel()
	// Handlers still need a moment after the grace period to answer the
	// calls it cancelled.
	final, cancelFinal := context.WithTimeout(context.Background(), h.opts.ShutdownTimeout+2*time.Second)
	defer cancelFinal()
	stopped := make(chan error, 1)
	go func() { stopped <- hs.Shutdown(final) }() // closes ln, waits for handlers
	var finished sync.WaitGroup
	if h.opts.Finish != nil {
		finished.Go(func() { h.opts.Finish(grace) })
	}
	h.shutdown(grace)
	finished.Wait()
	if err := <-stopped; err != nil {
		h.log.Warn("HTTP connections still open after the grace period: closing them", "error", err)
		hs.Close()
	}
	<-served // http.ErrServerClosed
	return nil
}

// httpHandler routes and guards every HTTP request.
type httpHandler struct {
	srv      *mcp.Server
	log      hclog.Logger
	opts     Options // defaults filled in
	loopback bool    // bound to loopback: check Host
	origins  map[string]bool
	anyOrig  bool
	token    []byte // "Bearer " + Token; nil when none
	limit    rate.Limit

	draining atomic.Bool
	unready  atomic.Bool // ctx has ended: /readyz answers 503 (health.go)

	// statelessSlots bound the stateless requests served at once;
	// statelessWG counts them, for shutdown, which ends the rest with stop.
	statelessSlots chan struct{}
	statelessWG    sync.WaitGroup
	stop           context.Context
	stopNow        context.CancelFunc

	mu       sync.Mutex
	sessions map[string]*httpSession
	legacy   map[string]*legacySession
	// evicted remembers the ids of the latest sessions evicted to admit
	// new ones, oldest first in evictedOrder (admit.go).
	evicted      map[string]bool
	evictedOrder []string

	// admitMu serializes admissions (admit.go); the root's is used.
	admitMu sync.Mutex
	// replayBytes counts the bytes of every session's replay ring, the
	// root's for every endpoint (Options.ReplayBudget).
	replayBytes atomic.Int64

	// extra are the handlers of Options.Endpoints, by path: each serves
	// its server's sessions, reached through this handler's ServeHTTP
	// (its guards) and shut down with it. root is the handler that
	// routes to it (nil for that one): the limits are the root's.
	extra map[string]*httpHandler
	root  *httpHandler

	// console serves Options.Console (console.go); nil without one.
	console *consoleGate
}

func newHTTPHandler(srv *mcp.Server, opts *Options, loopback bool) *httpHandler {
	h := &httpHandler{srv: srv, log: srv.Logger(), loopback: loopback, origins: map[string]bool{},
		sessions: map[string]*httpSession{}, legacy: map[string]*legacySession{}, evicted: map[string]bool{}}
	if opts != nil {
		h.opts = *opts
	}
	o := &h.opts
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.MaxBodySize <= 0 {
		o.MaxBodySize = mcp.DefaultMaxMessageSize
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Minute
	}
	switch {
	case o.RateLimit == 0:
		o.RateLimit = 100
	case o.RateLimit < 0:
		o.RateLimit = math.Inf(1)
	}
	h.limit = rate.Limit(o.RateLimit)
	if o.RateBurst <= 0 {
		o.RateBurst = max(1, int(min(2*o.RateLimit, 1<<20)))
	}
	if o.ReplayEvents <= 0 {
		o.ReplayEvents = 256
	}
	if o.ReplayBytes <= 0 {
		o.ReplayBytes = 4 << 20
	}
	if o.ReplayBudget <= 0 {
		o.ReplayBudget = 256 << 20
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 1000
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = 25 * time.Second
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	if o.MaxStatelessRequests <= 0 {
		o.MaxStatelessRequests = 4096
	}
	if o.Meter == nil {
		o.Meter = noMeter{}
	}
	h.statelessSlots = make(chan struct{}, o.MaxStatelessRequests)
	h.stop, h.stopNow = context.WithCancel(context.Background())
	for _, a := range o.AllowedOrigins {
		if a == "*" {
			h.anyOrig = true
		}
		h.origins[normalizeOrigin(a)] = true
	}
	if o.Token != "" {
		h.token = []byte("Bearer " + o.Token)
	}
	h.addEndpoints(loopback)
	if o.Console != nil {
		h.console = newConsoleGate(o.Console, o.ConsoleOrigin, h.draining.Load)
	}
	return h
}

// Preallocated header values: assigning them skips canonicalization and
// allocation on the hot path.
var (
	hdrJSON    = []string{"application/json"}
	hdrSSE     = []string{"text/event-stream"}
	hdrNoCache = []string{"no-cache"}
)

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var mcpAt *httpHandler // the Streamable HTTP endpoint the request is for, if any
	switch p := r.URL.Path; {
	case h.console != nil && isConsolePath(p):
		if h.loopback && !loopbackHost(r.Host) {
			break // refused below, as every request is
		}
		h.console.serve(w, r) // its own Origin guard, no bearer token: console.go
		return
	case p == PathMCP:
		mcpAt = h
	case p == PathSSE, p == PathMessage, p == PathHealthz, p == PathReadyz, h.isMetadataPath(p):
	case p == PathMetrics:
		if h.opts.Metrics != nil {
			break
		}
		fallthrough
	default:
		if mcpAt = h.extra[r.URL.Path]; mcpAt == nil {
			httpError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, "not found: the MCP endpoint is "+PathMCP)
			return
		}
	}
	if h.loopback && !loopbackHost(r.Host) {
		httpError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest,
			"forbidden: Host "+strconv.Quote(r.Host)+" is not a loopback name (DNS rebinding protection)")
		return
	}
	if h.isMetadataPath(r.URL.Path) { // public, to any origin: it shows where to get a token
		h.serveMetadata(w, r)
		return
	}
	if o := r.Header.Get("Origin"); o != "" {
		if !h.originAllowed(o, r.Host) {
			httpError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest,
				"forbidden: Origin "+strconv.Quote(o)+" is not allowed (allow it with --allowed-origin)")
			return
		}
		// An allowed page may read the answers (CORS), session id included.
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", o)
		hd.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
		hd.Add("Vary", "Origin")
		if r.Method == http.MethodOptions { // the browser's preflight, before any token check
			hd.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			hd.Set("Access-Control-Allow-Headers", allowedHeaders(r))
			hd.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if isHealthPath(r.URL.Path) { // no token: they reveal nothing
		h.serveHealth(w, r)
		return
	}
	if r = h.authorize(w, r); r == nil { // auth.go
		return
	}
	if h.draining.Load() {
		w.Header().Set("Connection", "close")
		httpError(w, http.StatusServiceUnavailable, nil, jsonrpc.CodeInvalidRequest, "service unavailable: the server is shutting down")
		return
	}
	switch {
	case mcpAt != nil:
		mcpAt.serveMCP(w, r)
	case r.URL.Path == PathMetrics:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			httpError(w, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest, "method not allowed: use GET")
			return
		}
		if !h.metricsAllowed(r) {
			httpError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest,
				"forbidden: no access rule lets this caller read the metrics (item.kind == 'metrics')")
			return
		}
		h.opts.Metrics.ServeHTTP(w, r)
	case r.URL.Path == PathSSE:
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			httpError(w, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest, "method not allowed: GET "+PathSSE+" opens an HTTP+SSE session")
			return
		}
		h.legacyOpen(w, r)
	case r.URL.Path == PathMessage:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			httpError(w, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest, "method not allowed: POST messages to "+PathMessage)
			return
		}
		h.legacyPost(w, r)
	}
}

// httpError answers with status and a JSON-RPC error response as body.
func httpError(w http.ResponseWriter, status int, id []byte, code int, msg string) {
	httpErrorData(w, status, id, jsonrpc.NewError(code, msg))
}

// httpErrorData answers with status and the JSON-RPC error e, data
// included.
func httpErrorData(w http.ResponseWriter, status int, id []byte, e *jsonrpc.Error) {
	bp := jsonrpc.GetBuf()
	*bp = jsonrpc.AppendError(*bp, id, e)
	w.Header()["Content-Type"] = hdrJSON
	w.Header().Set("Content-Length", strconv.Itoa(len(*bp)))
	w.WriteHeader(status)
	w.Write(*bp)
	jsonrpc.PutBuf(bp)
}

// newSessionID returns 32 bytes from the system's CSPRNG, base64url: 43
// visible ASCII characters, as the spec wants.
func newSessionID() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// shutdown drains and closes every session (see Serve), the extra
// endpoints' too.
func (h *httpHandler) shutdown(ctx context.Context) {
	var extra sync.WaitGroup
	for _, e := range h.extra {
		extra.Go(func() { e.shutdown(ctx) })
	}
	defer extra.Wait()
	h.mu.Lock() // the stateless requests count themselves under it
	h.draining.Store(true)
	h.mu.Unlock()
	h.srv.EndListeners() // listen streams end now, with their result
	defer h.stopNow()    // stateless requests past the grace period
	statelessDone := make(chan struct{})
	go func() { h.statelessWG.Wait(); close(statelessDone) }()
	defer func() {
		select {
		case <-statelessDone:
		case <-ctx.Done():
			h.log.Warn("shutdown: cancelling the stateless requests still running")
		}
	}()
	h.mu.Lock()
	var sessions []*httpSession
	for _, s := range h.sessions {
		sessions = append(sessions, s)
	}
	var legacy []*legacySession
	for _, s := range h.legacy {
		legacy = append(legacy, s)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() {
			if err := s.sess.Drain(ctx); err != nil {
				h.log.Warn("shutdown: cancelling the calls still running", "session", s.id[:8])
			}
			h.closeSession(s, "server shutdown")
		})
	}
	for _, s := range legacy {
		wg.Go(func() {
			if sess := s.session(); sess != nil {
				if err := sess.Drain(ctx); err != nil {
					h.log.Warn("shutdown: cancelling the calls still running", "session", s.id[:8])
				}
			}
			s.end()
		})
	}
	wg.Wait()
}

// newHTTPServer is the http.Server of every listener Serve and
// ServeConsole open: bounded headers (their size, and the time they
// take), keep-alive connections with no request closed after 2 minutes,
// and net/http's own complaints logged at DEBUG.
func newHTTPServer(h http.Handler, log hclog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}),
	}
}

// withTLS is ln speaking HTTPS with cfg (HTTP/1.1, as over plain HTTP);
// ln itself when cfg is nil.
func withTLS(ln net.Listener, cfg *tls.Config) net.Listener {
	if cfg == nil {
		return ln
	}
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	return tls.NewListener(ln, cfg)
}
