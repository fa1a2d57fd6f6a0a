package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/plughost/plughost/host/access"
	"github.com/plughost/plughost/host/console"
	"github.com/plughost/plughost/host/mcp/streamable"
	"github.com/plughost/plughost/host/oauth"
	"github.com/plughost/plughost/host/preflight"
	"github.com/plughost/plughost/host/tool"
)

// The console (host/console) is mounted here: at /console on --http's
// listener, or alone on --console-listen's (loopback only), never both. Its
// settings are read once, at start: the console block, and the auth
// block's verifier for the people who sign in through the authorization
// server; a reload changes the access rules it asks (the rules in force
// are asked on every request), not these.

// consoleSettings are what every console of this process is built with.
type consoleSettings struct {
	// disabled: the console block's enabled = false.
	disabled bool
	// oauth is the sign-in through the authorization server; nil without
	// the console block's client_id (or without the auth block).
	oauth *console.OAuthLogin
	// publicURL is the console block's public_url: the origin browsers
	// reach --http's listener by, behind a proxy; "" for the request's.
	publicURL string
}

// readConsoleSettings reads the console block of hf.Config; verifier is
// the auth block's (nil without one), which checks the tokens people
// sign in with as it checks the MCP clients'.
func readConsoleSettings(hf *Options, verifier *oauth.Verifier) (*consoleSettings, error) {
	cfg, err := LoadConfig(hf.Config)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return &consoleSettings{}, nil
	}
	cb := cfg.Console
	s := &consoleSettings{disabled: cb.Disabled, publicURL: cb.PublicURL}
	if cb.ClientID == "" || verifier == nil || cb.Disabled {
		return s, nil
	}
	secret, err := preflight.ConsoleClientSecret(&cb) // as plughost check reads it
	if err != nil {
		return nil, err
	}
	s.oauth = &console.OAuthLogin{Issuer: cb.LoginIssuer(cfg.Auth), ClientID: cb.ClientID, ClientSecret: secret,
		Resource: verifier.Resource(), Scopes: verifier.Scopes(), Verify: consoleVerify(verifier)}
	return s, nil
}

// consoleVerify adapts the verifier to the console: the caller a token
// speaks for, as the MCP endpoint sees it, and its expiry, when the
// console session ends.
func consoleVerify(v *oauth.Verifier) func(ctx context.Context, token string) (*console.Caller, time.Time, error) {
	return func(ctx context.Context, token string) (*console.Caller, time.Time, error) {
		c, err := v.Verify(ctx, token)
		if err != nil {
			return nil, time.Time{}, err
		}
		return &console.Caller{Subject: c.Subject, ClientID: c.ClientID, Issuer: c.Issuer, Scopes: c.Scopes, Claims: c.Claims}, c.Expiry, nil
	}
}

// consoleListener is the listener a console is served on.
type consoleListener struct {
	// base is its URL's scheme and address, as browsers on this machine
	// reach it ("http://127.0.0.1:8080").
	base string
	// loopback: only this machine reaches it, so a login link is made
	// and printed.
	loopback bool
	// token is the static token whose holder may sign in (--token on
	// --http); "" for none.
	token string
	// publicURL is the origin browsers reach it by, when not base's
	// (--http behind a proxy: the console block's public_url).
	publicURL string
}

// newConsole builds the console over the running host for l, printing
// where it is (and, on loopback, its login link) in the log.
func (h *Host) newConsole(s *consoleSettings, l consoleListener) (*console.Handler, error) {
	if s.oauth != nil && !l.loopback && l.publicURL == "" {
		// The redirect URI would be made from each request's Host, which
		// nothing checks beyond loopback: a crafted Host could have an
		// issuer that matches redirect URIs loosely send a person's code
		// elsewhere.
		return nil, errors.New("the console block's client_id signs people in beyond loopback: set its public_url " +
			"(the origin browsers reach plughost by, e.g. \"https://mcp.example.com\"), from which the redirect URI is made")
	}
	o := &console.Options{
		Source:    &consoleSource{h},
		Token:     l.token,
		OAuth:     s.oauth,
		Allowed:   h.consoleAllowed,
		PublicURL: l.publicURL,
		// Secure cookies when plughost speaks TLS, or a proxy in front
		// does (public_url https).
		Secure: h.certs != nil || strings.HasPrefix(l.publicURL, "https://"),
		Logger: h.log.Named("console"),
	}
	if l.loopback {
		o.LoginKey = console.NewLoginKey()
	}
	c, err := console.New(o)
	if err != nil {
		return nil, err
	}
	var how []string
	if o.LoginKey != "" {
		how = append(how, "the login link")
	}
	if o.Token != "" {
		how = append(how, "the static token")
	}
	if o.OAuth != nil {
		how = append(how, "the authorization server "+o.OAuth.Issuer)
	}
	h.log.Info("serving the console", "url", cmp.Or(l.publicURL, l.base)+console.Path+"/", "sign_in", how)
	if o.LoginKey != "" {
		// The key signs in with every right: it is printed here only, on
		// a listener only this machine reaches, for the user whose log
		// this is (docs/security.md "The console").
		h.log.Info("console: open this link to sign in", "login_link", console.LoginURL(l.base, o.LoginKey))
	}
	return c, nil
}

// consoleAllowed asks the access rules in force whether a person signed
// in through the authorization server may do kind ("console": see the
// pages; "approve": approve or revoke plugin).
func (h *Host) consoleAllowed(c *console.Caller, kind, plugin string) bool {
	tc := &tool.Caller{Subject: c.Subject, ClientID: c.ClientID, Issuer: c.Issuer, Scopes: c.Scopes, Claims: c.Claims, Local: c.Local}
	rules := h.access.Load()
	switch kind {
	case access.ItemConsole:
		return rules.ConsoleAllowed(tc)
	case access.ItemApprove:
		return rules.ApproveAllowed(tc, plugin)
	}
	return false
}

// ErrConsoleListen is returned (wrapped) for a --console-listen address
// the console may not be served on.
var ErrConsoleListen = errors.New("--console-listen")

// listenConsole opens --console-listen's listener, before any plugin
// starts: a loopback address only (the console lets its user approve code
// to run), and not with the console turned off.
func listenConsole(addr string, s *consoleSettings) (net.Listener, error) {
	if s.disabled {
		return nil, fmt.Errorf("%w %s: the configuration's console block says enabled = false", ErrConsoleListen, addr)
	}
	if !loopback(addr) {
		return nil, fmt.Errorf("%w %s: not a loopback address; the console's own listener is for this machine only "+
			"(127.0.0.1:PORT, [::1]:PORT or localhost:PORT); to reach it from elsewhere, serve --http, where it is at %s behind the token or OAuth",
			ErrConsoleListen, addr, console.Path)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConsoleListen, err)
	}
	return ln, nil
}

// serveConsoleAlone serves the console on ln (--console-listen) in the
// background until ctx ends or stop is called; stop returns once it has
// stopped, so that the host stops after the pages that show it.
func (h *Host) serveConsoleAlone(ctx context.Context, ln net.Listener, s *consoleSettings) (stop func(), err error) {
	c, err := h.newConsole(s, consoleListener{base: h.scheme() + "://" + ln.Addr().String(), loopback: true})
	if err != nil {
		ln.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.Close() // its event streams' watch of the plugins
		if err := streamable.ServeConsole(ctx, ln, c, h.tlsConfig(), h.log.Named("console")); err != nil {
			h.log.Error("the console's listener stopped", "error", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}
