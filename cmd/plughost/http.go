package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/streamable"
	"github.com/plughost/plughost/host/oauth"
	"github.com/plughost/plughost/host/preflight"
)

// httpFlags are serve's flags for Streamable HTTP. They fill an
// streamable.Options, which the config file will fill too once it exists.
type httpFlags struct {
	addr     string
	token    string
	origins  listFlag
	idle     time.Duration
	rate     float64
	maxBody  int64
	shutdown time.Duration
	drain    time.Duration
}

func (f *httpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "http", "", "serve Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8080; https:// with --tls-cert)")
	// The default is read from the environment in options, never shown
	// as the flag's default: -h would print the secret.
	fs.StringVar(&f.token, "token", "",
		"bearer token HTTP clients must send (default $PLUGHOST_TOKEN); required to listen beyond loopback")
	fs.Var(&f.origins, "allowed-origin", "an Origin browsers may send besides the server's own, e.g. http://localhost:6274 (repeatable; * allows any)")
	fs.DurationVar(&f.idle, "session-idle", 30*time.Minute, "end HTTP sessions idle for this long")
	fs.Float64Var(&f.rate, "rate-limit", 100, "requests per second one HTTP session may send (negative: no limit)")
	fs.Int64Var(&f.maxBody, "max-body", mcp.DefaultMaxMessageSize, "largest HTTP request body, in bytes")
	fs.DurationVar(&f.shutdown, "shutdown-grace", 10*time.Second, "on SIGINT/SIGTERM, how long calls in flight may finish")
	fs.DurationVar(&f.drain, "drain-delay", 0, "on SIGINT/SIGTERM, how long to go on serving while /readyz answers 503, "+
		"so that load balancers stop sending requests first (e.g. 5s behind Kubernetes); --shutdown-grace follows")
}

// options are the HTTP server's options; the token is --token, else
// $PLUGHOST_TOKEN.
func (f *httpFlags) options() *streamable.Options {
	if f.token == "" {
		f.token = os.Getenv("PLUGHOST_TOKEN")
	}
	return &streamable.Options{
		Token:           f.token,
		AllowedOrigins:  f.origins,
		IdleTimeout:     f.idle,
		RateLimit:       f.rate,
		MaxBodySize:     f.maxBody,
		ShutdownTimeout: f.shutdown,
		DrainDelay:      f.drain,
	}
}

// oauthVerifier is the config's auth block as a Verifier; nil without one.
// It is read before the listener opens, since a Verifier lets it reach
// beyond loopback (streamable.Options.Check).
func oauthVerifier(hf *hostFlags, stderr io.Writer) (*oauth.Verifier, error) {
	cfg, err := loadConfig(hf.config)
	if err != nil || cfg.Auth == nil {
		return nil, err
	}
	a := cfg.Auth
	log := hclog.New(&hclog.LoggerOptions{Name: "plughost.oauth", Level: hclog.LevelFromString(hf.logLevel), Output: stderr})
	o := &oauth.Options{Issuers: a.Issuers, Resource: a.Resource, Scopes: a.Scopes, Leeway: a.Leeway, Logger: log}
	if a.IntrospectionEndpoint != "" {
		secret, err := preflight.ClientSecret(a, os.Getenv) // as plughost check reads it
		if err != nil {
			return nil, err
		}
		o.Introspection = &oauth.Introspection{Endpoint: a.IntrospectionEndpoint, ClientID: a.ClientID, ClientSecret: secret}
	}
	return oauth.New(o)
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// serveHTTP runs the MCP server over Streamable HTTP (and the deprecated
// HTTP+SSE transport) until SIGINT or SIGTERM, then shuts down gracefully:
// calls in flight finish, streams close, plugins stop.
func serveHTTP(hf *hostFlags, f *httpFlags, stderr io.Writer) error {
	opts := f.options()
	verifier, err := oauthVerifier(hf, stderr)
	if err != nil {
		return err
	}
	opts.OAuth = verifier
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	// Refuse before any plugin starts.
	if err := opts.Check(ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	hf.http = true
	h, err := startHost(hf, stderr)
	if err != nil {
		ln.Close()
		return err
	}
	warnOpenTrust(h.trust, ln.Addr().String(), h.pluginDir, h.log.Named("trust"))
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	srv := mcp.NewServer(h.catalog, h.mcpOptions())
	h.sampler.use(srv) // devices' text tasks ask a model of a client at /mcp
	// GET /readyz: 503 until the plugins found at start have loaded.
	opts.Ready = h.ready
	opts.MaxSessions, opts.ReplayBytes, opts.ReplayBudget = h.limits.Sessions, int(h.limits.ReplayBytes), h.limits.ReplayBudget
	if m := h.obs.metrics; m != nil { // GET /metrics, behind the token
		opts.Meter, opts.Metrics = m, m.Handler()
	}
	stopMetrics, err := h.obs.serveMetrics(hf.observe, h.tlsConfig(), h.log)
	if err != nil {
		ln.Close()
		return errors.Join(err, h.stop())
	}
	defer stopMetrics()
	opts.TLSConfig = h.tlsConfig()
	base := h.scheme() + "://" + ln.Addr().String()
	url := base + streamable.PathMCP
	auth := "none (loopback only)"
	switch {
	case verifier != nil && opts.Token != "":
		auth = "an OAuth access token, or the static token (--token)"
	case verifier != nil:
		auth = "an OAuth access token"
	case opts.Token != "":
		auth = "Authorization: Bearer <token>"
	}
	if verifier != nil || opts.Token != "" {
		h.warnClear("--http", ln.Addr().String())
	}
	if verifier != nil {
		h.log.Info("OAuth: accepting access tokens for this resource", "resource", verifier.Resource(),
			"metadata", verifier.MetadataURL(), "scopes", verifier.Scopes())
		go verifier.Prefetch(ctx) // an unreachable issuer shows now, as a WARN
	}
	h.log.Info("serving MCP over Streamable HTTP", "url", url, "legacy_sse", base+streamable.PathSSE, "auth", auth)
	if h.searchPath != "" {
		// The search block's path: one more server over the same catalog
		// (and plugins), in tool search mode, with sessions of its own.
		opts.Endpoints = map[string]*mcp.Server{h.searchPath: mcp.NewServer(h.catalog, h.searchOptions())}
		h.log.Info("serving MCP in tool search mode over Streamable HTTP", "url", base+h.searchPath, "auth", auth)
	}
	h.log.Info("connect an MCP client to " + url + `; the MCP Inspector: run "npx @modelcontextprotocol/inspector", choose Transport Type "Streamable HTTP" and URL ` + url)
	serveErr := streamable.Serve(ctx, srv, ln, opts)
	stopErr := h.stop()
	if serveErr != nil {
		return serveErr
	}
	h.log.Info("stopped")
	return stopErr
}
