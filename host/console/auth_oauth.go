package console

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// The OAuth sign-in: the authorization code flow with PKCE (S256) against
// Options.OAuth's issuer, asking a token for the MCP resource (RFC 8707),
// so that the token a person signs in with is checked exactly as an MCP
// client's is (OAuthLogin.Verify) and the access rules see the same
// caller.
//
// GET /console/oauth/start remembers a pending sign-in under a random
// state (single use, pendingLoginTTL, at most OAuthLogin.MaxPendingLogins
// at once) and sends the browser to the issuer; the issuer sends it back
// to GET /console/oauth/callback with a code, which is exchanged with the
// PKCE verifier for the access token. The pending sign-in is bound to the
// browser that started it by a cookie (loginCookie) whose hash it keeps:
// a callback URL with someone else's code and state (login CSRF: signing
// a victim into the attacker's account) fails in any other browser.

const (
	// loginCookie binds a pending sign-in to its browser. SameSite=Lax,
	// unlike the session's: the issuer's redirect back is a cross-site
	// navigation, which Strict cookies do not ride.
	loginCookie = "plughost_console_login"
	// pendingLoginTTL is how long a started sign-in may take at the
	// issuer.
	pendingLoginTTL = 10 * time.Minute
	// defaultMaxPendingLogins bounds the sign-ins in progress (anyone may
	// start one).
	defaultMaxPendingLogins = 64
	// metadataTTL is how long the issuer's endpoints are used before they
	// are read again; a failure to read them is answered again for
	// metadataRetry without asking, so that sign-ins started while the
	// issuer is down (anyone may start one) do not each wait on it.
	metadataTTL   = time.Hour
	metadataRetry = 10 * time.Second
	// issuerTimeout bounds one metadata fetch and one token exchange.
	issuerTimeout = 10 * time.Second
	// maxMetadataBytes bounds the issuer's metadata document.
	maxMetadataBytes = 1 << 20
	// maxShownError bounds what of the issuer's error is shown.
	maxShownError = 300
)

// oauthLogins are the OAuth sign-ins in progress and the issuer's
// endpoints.
type oauthLogins struct {
	o   *OAuthLogin
	max int
	now func() time.Time
	hc  *http.Client

	mu      sync.Mutex
	pending map[string]*pendingLogin // by state

	metaMu    sync.Mutex // held across a fetch: one at a time
	endpoints *oauth2.Endpoint
	fetched   time.Time
	failed    error // the last fetch's, until failedAt+metadataRetry
	failedAt  time.Time
}

// pendingLogin is a sign-in sent to the issuer and not back yet.
type pendingLogin struct {
	config   *oauth2.Config // with the redirect URI the issuer was given
	verifier string         // PKCE's
	next     string         // where the browser goes once signed in
	binding  [sha256.Size]byte
	started  time.Time
}

// newOAuthLogins returns the sign-in state of o; nil for nil.
func newOAuthLogins(o *OAuthLogin, now func() time.Time) *oauthLogins {
	if o == nil {
		return nil
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: issuerTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // the metadata and token endpoints answer where they are
		}}
	}
	return &oauthLogins{o: o, max: cmp.Or(o.MaxPendingLogins, defaultMaxPendingLogins), now: now, hc: hc,
		pending: map[string]*pendingLogin{}}
}

// errTooManyLogins: MaxPendingLogins sign-ins are in progress.
var errTooManyLogins = errors.New("too many sign-ins in progress")

// add keeps p under a new random state.
func (l *oauthLogins) add(p *pendingLogin) (state string, err error) {
	now := l.now()
	p.started = now
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) >= l.max {
		for s, q := range l.pending {
			if now.Sub(q.started) >= pendingLoginTTL {
				delete(l.pending, s)
			}
		}
	}
	if len(l.pending) >= l.max {
		return "", errTooManyLogins
	}
	state = randomToken()
	l.pending[state] = p
	return state, nil
}

// take returns the pending sign-in of state and forgets it (a state is
// good once); nil when there is none or it is older than pendingLoginTTL.
func (l *oauthLogins) take(state string) *pendingLogin {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pending[state]
	if !ok {
		return nil
	}
	delete(l.pending, state)
	if l.now().Sub(p.started) >= pendingLoginTTL {
		return nil
	}
	return p
}

// config is the OAuth client configuration for a sign-in whose redirect
// URI is redirect, with the issuer's endpoints (read from its metadata,
// kept metadataTTL).
func (l *oauthLogins) config(ctx context.Context, redirect string) (*oauth2.Config, error) {
	l.metaMu.Lock()
	defer l.metaMu.Unlock()
	now := l.now()
	if l.endpoints == nil || now.Sub(l.fetched) >= metadataTTL {
		if l.failed != nil && now.Sub(l.failedAt) < metadataRetry {
			return nil, l.failed
		}
		ep, err := l.discover(ctx)
		if err != nil {
			l.failed, l.failedAt = err, now
			return nil, err
		}
		l.endpoints, l.fetched, l.failed = ep, now, nil
	}
	return &oauth2.Config{ClientID: l.o.ClientID, ClientSecret: l.o.ClientSecret, Endpoint: *l.endpoints,
		RedirectURL: redirect, Scopes: l.o.Scopes}, nil
}

// discover reads the issuer's metadata: RFC 8414's well-known URL first,
// then OpenID Connect's (what oidc-provider serves), and returns its
// endpoints. The metadata must name the issuer itself (RFC 8414 §3.3),
// offer PKCE with S256, and its endpoints must be https (http only on
// loopback).
func (l *oauthLogins) discover(ctx context.Context) (*oauth2.Endpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, issuerTimeout)
	defer cancel()
	u, err := url.Parse(l.o.Issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("the issuer %q is not a URL", l.o.Issuer)
	}
	p := strings.TrimSuffix(u.Path, "/")
	var errs []error
	for _, at := range []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + p,
		u.Scheme + "://" + u.Host + p + "/.well-known/openid-configuration",
	} {
		meta, err := l.metadata(ctx, at)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := l.check(meta); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		ep := &oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint,
			AuthStyle: oauth2.AuthStyleInHeader}
		// A public client (no secret) names itself in the form; a
		// confidential one uses HTTP Basic unless the issuer only takes
		// the secret in the form.
		if l.o.ClientSecret == "" || slices.Equal(meta.TokenEndpointAuthMethodsSupported, []string{"client_secret_post"}) {
			ep.AuthStyle = oauth2.AuthStyleInParams
		}
		return ep, nil
	}
	return nil, errors.Join(errs...)
}

// metadata GETs the metadata document at u.
func (l *oauthLogins) metadata(ctx context.Context, u string) (*oauthex.AuthServerMeta, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := l.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("%s: not JSON (Content-Type %q)", u, resp.Header.Get("Content-Type"))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	if len(b) > maxMetadataBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", u, maxMetadataBytes)
	}
	var meta oauthex.AuthServerMeta
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	return &meta, nil
}

// check refuses metadata the console must not follow.
func (l *oauthLogins) check(meta *oauthex.AuthServerMeta) error {
	if meta.Issuer != l.o.Issuer {
		return fmt.Errorf("the metadata names the issuer %q, not %q", meta.Issuer, l.o.Issuer)
	}
	if !slices.Contains(meta.CodeChallengeMethodsSupported, "S256") {
		return errors.New("the issuer does not offer PKCE with S256 (code_challenge_methods_supported)")
	}
	for name, e := range map[string]string{"authorization_endpoint": meta.AuthorizationEndpoint, "token_endpoint": meta.TokenEndpoint} {
		u, err := url.Parse(e)
		if err != nil || u.Host == "" || !(u.Scheme == "https" || u.Scheme == "http" && isLoopback(u.Hostname())) {
			return fmt.Errorf("%s %q: want an https URL (http only on loopback)", name, e)
		}
	}
	return nil
}

// isLoopback reports whether host names this machine.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// oauthStart serves GET /console/oauth/start: a pending sign-in, and the
// browser sent to the issuer's authorization endpoint.
func (h *Handler) oauthStart(w http.ResponseWriter, r *http.Request) {
	if h.logins == nil {
		h.authProblem(w, r, http.StatusNotFound, "This console has no OAuth sign-in configured.")
		return
	}
	o := h.opts.OAuth
	next := safeNext(r.URL.Query().Get("next"))
	config, err := h.logins.config(r.Context(), h.origin(r)+Path+"/oauth/callback")
	if err != nil {
		h.log.Warn("console sign-in: the issuer's metadata", "issuer", o.Issuer, "error", err)
		h.render(w, http.StatusBadGateway, "login", h.loginData(next,
			"The authorization server "+o.Issuer+" could not be asked: "+err.Error()))
		return
	}
	// One binding per browser, kept while it lasts: two tabs signing in
	// at once both succeed.
	binding := randomToken()
	if c, err := r.Cookie(h.cookieName(loginCookie)); err == nil && len(c.Value) == len(binding) {
		binding = c.Value
	}
	verifier := oauth2.GenerateVerifier()
	state, err := h.logins.add(&pendingLogin{config: config, verifier: verifier, next: next,
		binding: sha256.Sum256([]byte(binding))})
	if err != nil {
		h.log.Warn("console sign-in refused: too many in progress", "max", h.logins.max, "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", "60")
		h.render(w, http.StatusServiceUnavailable, "login", h.loginData(next, fmt.Sprintf(
			"Too many sign-ins are in progress (%d, each kept %v): try again in a minute.", h.logins.max, pendingLoginTTL)))
		return
	}
	h.setCookie(w, loginCookie, binding, Path+"/oauth/", http.SameSiteLaxMode, int(pendingLoginTTL/time.Second))
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if o.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", o.Resource))
	}
	http.Redirect(w, r, config.AuthCodeURL(state, opts...), http.StatusFound)
}

// oauthCallback serves GET /console/oauth/callback: the issuer's answer.
// The code is exchanged (with the PKCE verifier and the resource), the
// access token verified as the MCP endpoint verifies one, the access
// rules asked whether its caller may see the console; then a session.
func (h *Handler) oauthCallback(w http.ResponseWriter, r *http.Request) {
	if h.logins == nil {
		h.authProblem(w, r, http.StatusNotFound, "This console has no OAuth sign-in configured.")
		return
	}
	o := h.opts.OAuth
	q := r.URL.Query()
	p := h.logins.take(q.Get("state"))
	next := defaultNext
	if p != nil {
		next = p.next
	}
	if p == nil {
		h.render(w, http.StatusBadRequest, "login", h.loginData(next,
			"This sign-in is unknown, was used already, or is older than 10 minutes: sign in again."))
		return
	}
	c, err := r.Cookie(h.cookieName(loginCookie))
	if got := sha256.Sum256([]byte(cookieValue(c, err))); subtle.ConstantTimeCompare(got[:], p.binding[:]) != 1 {
		h.log.Warn("console sign-in refused: the callback came to another browser than the one that started it",
			"remote", r.RemoteAddr)
		h.render(w, http.StatusForbidden, "login", h.loginData(next,
			"This sign-in was not started in this browser: sign in again here."))
		return
	}
	// The issuer's error is shown only now, for a sign-in this browser
	// started: a crafted callback URL cannot put words on the console's
	// page.
	if e := q.Get("error"); e != "" {
		msg := "The authorization server refused the sign-in: " + issuerText(e)
		if d := q.Get("error_description"); d != "" {
			msg += " (" + issuerText(d) + ")"
		}
		h.log.Info("console sign-in refused by the issuer", "issuer", o.Issuer, "error", issuerText(e))
		h.render(w, http.StatusForbidden, "login", h.loginData(next, msg))
		return
	}
	code := q.Get("code")
	if code == "" {
		h.render(w, http.StatusBadRequest, "login", h.loginData(next, "The authorization server sent no code: sign in again."))
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), oauth2.HTTPClient, h.logins.hc), issuerTimeout)
	defer cancel()
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(p.verifier)}
	if o.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", o.Resource))
	}
	tok, err := p.config.Exchange(ctx, code, opts...)
	if err != nil {
		why := "could not be reached: " + issuerText(err.Error())
		if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok && re.ErrorCode != "" {
			why = "refused the code: " + issuerText(re.ErrorCode)
			if re.ErrorDescription != "" {
				why += " (" + issuerText(re.ErrorDescription) + ")"
			}
		}
		h.log.Warn("console sign-in: the token exchange failed", "issuer", o.Issuer, "why", why)
		h.render(w, http.StatusBadGateway, "login", h.loginData(next, "The authorization server "+why))
		return
	}
	caller, expires, err := o.Verify(ctx, tok.AccessToken)
	if err != nil {
		h.log.Warn("console sign-in refused: the access token does not verify", "issuer", o.Issuer, "error", err)
		h.render(w, http.StatusForbidden, "login", h.loginData(next,
			"The access token "+o.Issuer+" issued is not accepted here: "+issuerText(err.Error())))
		return
	}
	if !tok.Expiry.IsZero() && (expires.IsZero() || tok.Expiry.Before(expires)) {
		expires = tok.Expiry
	}
	u := &user{caller: *caller, name: oauthUserName(caller, o.Issuer), expires: expires}
	if !h.may(u, "console", "") {
		h.log.Info("console sign-in refused by the access rules", "user", u.name)
		h.render(w, http.StatusForbidden, "login", h.loginData(next,
			u.name+" signed in, but the access rules do not let them see the console (item kind \"console\")."))
		return
	}
	h.startSession(w, r, u)
	// Not a redirect: the browser came here from the issuer, and a
	// redirect keeps that cross-site initiator, so the SameSite=Strict
	// session cookie would not ride it (Chromium, tried: the page after
	// a 303 came without it, and the console would ask to sign in
	// again). The page's refresh is a navigation from the console's own
	// page, which the cookie rides.
	h.render(w, http.StatusOK, "signed-in", &signedInData{Name: u.name, Next: next})
}

// signedInData is what the page after an OAuth sign-in shows.
type signedInData struct {
	Name, Next string
}

// cookieValue is c's value, "" when err says there is none.
func cookieValue(c *http.Cookie, err error) string {
	if err != nil {
		return ""
	}
	return c.Value
}

// oauthUserName is who an OAuth user is audited as: "SUBJECT via ISSUER"
// (the client id for a token without a subject).
func oauthUserName(c *Caller, issuer string) string {
	who := c.Subject
	if who == "" {
		who = "client " + c.ClientID
	}
	if c.Issuer != "" {
		issuer = c.Issuer
	}
	return who + " via " + issuer
}

// issuerText is s, from the issuer, cut to maxShownError bytes at a rune
// boundary: shown as text, never as markup.
func issuerText(s string) string {
	if len(s) <= maxShownError {
		return s
	}
	cut := maxShownError
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
