package serve

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/streamable"
	"github.com/plughost/plughost/host/oauth"
	"github.com/plughost/plughost/host/preflight"
)

// streamableOptions are the HTTP server's options; the token is --token,
// else $PLUGHOST_TOKEN.
func (f *HTTPOptions) streamableOptions() *streamable.Options {
	if f.Token == "" {
		f.Token = os.Getenv("PLUGHOST_TOKEN")
	}
	return &streamable.Options{
		Token:           f.Token,
		AllowedOrigins:  f.Origins,
		IdleTimeout:     f.Idle,
		RateLimit:       f.Rate,
		MaxBodySize:     f.MaxBody,
		BodyTimeout:     f.BodyWait,
		ShutdownTimeout: f.Shutdown,
		DrainDelay:      f.Drain,
	}
}

// oauthVerifier is the config's auth block as a Verifier; nil without one.
// It is read before the listener opens, since a Verifier lets it reach
// beyond loopback (streamable.Options.Check).
func oauthVerifier(hf *Options, stderr io.Writer) (*oauth.Verifier, error) {
	cfg, err := LoadConfig(hf.Config)
	if err != nil || cfg.Auth == nil {
		return nil, err
	}
	a := cfg.Auth
	log := hclog.New(&hclog.LoggerOptions{Name: "plughost.oauth", Level: hclog.LevelFromString(hf.LogLevel), Output: stderr})
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

// HTTP runs the MCP server over Streamable HTTP (and the deprecated
// HTTP+SSE transport) at f.Addr until SIGINT or SIGTERM, then shuts down
// gracefully: calls in flight finish, streams close, plugins stop. SIGHUP
// or a change of the configuration file reloads it (reload.go).
func HTTP(hf *Options, f *HTTPOptions, stderr io.Writer) error {
	opts := f.streamableOptions()
	verifier, err := oauthVerifier(hf, stderr)
	if err != nil {
		return err
	}
	opts.OAuth = verifier
	consoleSet, err := readConsoleSettings(hf, verifier)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.Addr)
	if err != nil {
		return err
	}
	// Refuse before any plugin starts.
	if err := opts.Check(ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	var consoleLn net.Listener // --console-listen: the console there, not at /console
	if hf.ConsoleListen != "" {
		if consoleLn, err = listenConsole(hf.ConsoleListen, consoleSet); err != nil {
			ln.Close()
			return err
		}
	}
	closeListeners := func() {
		ln.Close()
		if consoleLn != nil {
			consoleLn.Close()
		}
	}
	hf.HTTP = true
	h, err := Start(hf, stderr)
	if err != nil {
		closeListeners()
		return err
	}
	warnOpenTrust(h.trust, ln.Addr().String(), h.pluginDir, h.log.Named("trust"))
	h.reloads.noteHTTP(f) // the console's configuration page
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	srv := h.serveWith(mcp.NewServer(h.catalog, h.mcpOptions()))
	h.sampler.use(srv) // devices' text tasks ask a model of a client at /mcp
	// GET /readyz: 503 until the plugins found at start have loaded.
	opts.Ready = h.ready
	// The tasks running here may end within the grace period (Stop fails
	// the rest, naming this replica): see docs/operators.md "Rolling
	// upgrades".
	opts.Finish = h.drainTasks
	opts.MaxSessions, opts.ReplayBytes, opts.ReplayBudget = h.limits.Sessions, int(h.limits.ReplayBytes), h.limits.ReplayBudget
	if m := h.obs.metrics; m != nil { // GET /metrics, behind the token; to OAuth callers an access rule admits
		opts.Meter, opts.Metrics = m, m.Handler()
		opts.MetricsAllowed = func(c *mcp.Caller) bool { return h.access.Load().MetricsAllowed(c) } // the rules in force
	}
	stopMetrics, err := h.obs.serveMetrics(hf.Observe, h.tlsConfig(), h.log)
	if err != nil {
		closeListeners()
		return errors.Join(err, h.Stop())
	}
	defer stopMetrics()
	opts.TLSConfig = h.tlsConfig()
	base := h.scheme() + "://" + ln.Addr().String()
	stopConsole := func() {}
	switch {
	case consoleLn != nil:
		if stopConsole, err = h.serveConsoleAlone(ctx, consoleLn, consoleSet); err != nil {
			ln.Close()
			return errors.Join(err, h.Stop())
		}
	case !consoleSet.disabled:
		c, err := h.newConsole(consoleSet, consoleListener{base: base, loopback: loopback(ln.Addr().String()), token: opts.Token,
			publicURL: consoleSet.publicURL})
		if err != nil {
			ln.Close()
			return errors.Join(err, h.Stop())
		}
		opts.Console, opts.ConsoleOrigin = c, consoleSet.publicURL
		stopConsole = c.Close // its event streams' watch of the plugins
	}
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
		opts.Endpoints = map[string]*mcp.Server{h.searchPath: h.serveWith(mcp.NewServer(h.catalog, h.searchOptions()))}
		h.log.Info("serving MCP in tool search mode over Streamable HTTP", "url", base+h.searchPath, "auth", auth)
	}
	h.log.Info("connect an MCP client to " + url + `; the MCP Inspector: run "npx @modelcontextprotocol/inspector", choose Transport Type "Streamable HTTP" and URL ` + url)
	stopReloads := h.watchReloads() // SIGHUP, or the --config file changed
	serveErr := streamable.Serve(ctx, srv, ln, opts)
	stopReloads()
	stopConsole()
	stopErr := h.Stop()
	if serveErr != nil {
		return serveErr
	}
	h.log.Info("stopped")
	return stopErr
}
