package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// The console's sign-in: the session cookie, the login page with its
// three ways in (the static token, the login link, OAuth: auth_oauth.go),
// logout, and the checks every page and POST make (signedIn, checkPost).

const (
	// sessionCookie names the session's cookie (with the __Host- prefix
	// on HTTPS, which pins it to this host and Path=/).
	sessionCookie = "plughost_console"
	// maxFormBytes bounds a POSTed form (a login, an approval): far more
	// than any of the console's forms holds.
	maxFormBytes = 64 << 10
	// tokenHolder, loginLinkUser: who a token or login-link sign-in is
	// audited as (an OAuth one as "SUBJECT via ISSUER": oauthUserName).
	tokenHolder   = "the static token's holder"
	loginLinkUser = "local user (login link)"
)

// authRoutes registers the login and logout routes.
func (h *Handler) authRoutes() {
	h.mux.HandleFunc("GET "+Path+"/login", h.loginPage)
	h.mux.HandleFunc("POST "+Path+"/login", h.tokenLogin)
	h.mux.HandleFunc("POST "+Path+"/logout", h.logout)
	h.mux.HandleFunc("GET "+Path+"/oauth/start", h.oauthStart)
	h.mux.HandleFunc("GET "+Path+"/oauth/callback", h.oauthCallback)
}

// cookieName is the name of a cookie of the console: with the __Host-
// prefix on HTTPS, so that no other host (a sibling subdomain) can set or
// shadow it.
func (h *Handler) cookieName(name string) string {
	if h.opts.Secure {
		return "__Host-" + name
	}
	return name
}

// cookiePath is p, or "/" on HTTPS, where the __Host- prefix requires it.
func (h *Handler) cookiePath(p string) string {
	if h.opts.Secure {
		return "/"
	}
	return p
}

// setCookie sets a console cookie: HttpOnly (no script reads it), Secure
// on HTTPS. maxAge 0 leaves it a browser-session cookie; negative
// deletes it.
func (h *Handler) setCookie(w http.ResponseWriter, name, value, path string, sameSite http.SameSite, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: h.cookieName(name), Value: value, Path: h.cookiePath(path), MaxAge: maxAge,
		HttpOnly: true, Secure: h.opts.Secure, SameSite: sameSite,
	})
}

// startSession signs u in: a new session and its cookie, SameSite=Strict
// so that no other site's page sends it.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, u *user) {
	id, dropped := h.sess.create(u)
	if dropped > 0 {
		h.log.Info("console sessions full: the least recently used ended for a new sign-in",
			"max_sessions", h.opts.MaxSessions, "ended", dropped)
	}
	h.setCookie(w, sessionCookie, id, Path, http.SameSiteStrictMode, 0)
	h.log.Info("console sign-in", "user", u.name, "remote", r.RemoteAddr)
}

// signedIn returns the user of r's session cookie; nil when r has none
// that is live.
func (h *Handler) signedIn(r *http.Request) *user {
	c, err := r.Cookie(h.cookieName(sessionCookie))
	if err != nil {
		return nil
	}
	return h.sess.get(c.Value)
}

// signInFirst answers a request that needs a session and has none: a GET
// goes to the login page (which brings it back after), anything else is
// refused.
func (h *Handler) signInFirst(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.authProblem(w, r, http.StatusForbidden, "You are not signed in, or your session ended: sign in again.")
		return
	}
	http.Redirect(w, r, loginPath(r.URL.RequestURI()), http.StatusSeeOther)
}

// loginPath is the login page's path, with next when it is not the
// default.
func loginPath(next string) string {
	next = safeNext(next)
	if next == defaultNext {
		return Path + "/login"
	}
	return Path + "/login?" + url.Values{"next": {next}}.Encode()
}

// checkPost checks a POST that changes something: from a page of the
// console's own origin, with a live session and its CSRF token (form
// field "csrf"). It returns the user (r's form parsed, bounded by
// maxFormBytes), or nil once it has answered 403 (or 400/413 for a form
// that does not parse).
//
// The session cookie is SameSite=Strict, so another site's form does not
// carry it in browsers that honour that; the origin check refuses those
// that send Origin or Sec-Fetch-Site; the CSRF token, which only the
// console's own pages hold, refuses the rest.
func (h *Handler) checkPost(w http.ResponseWriter, r *http.Request) *user {
	if why := h.crossSite(r); why != "" {
		h.authProblem(w, r, http.StatusForbidden, why)
		return nil
	}
	u := h.signedIn(r)
	if u == nil {
		h.authProblem(w, r, http.StatusForbidden, "You are not signed in, or your session ended: sign in again.")
		return nil
	}
	if !h.parseForm(w, r) {
		return nil
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(u.csrf)) != 1 {
		h.authProblem(w, r, http.StatusForbidden,
			"The form's CSRF token is missing or is not this session's: reload the page and try again.")
		return nil
	}
	return u
}

// parseForm reads r's form, at most maxFormBytes; false once it has
// answered why not.
func (h *Handler) parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	err := r.ParseForm()
	if err == nil {
		return true
	}
	if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
		h.authProblem(w, r, http.StatusRequestEntityTooLarge,
			"The form is larger than "+strconv.Itoa(maxFormBytes>>10)+" KiB.")
		return false
	}
	h.authProblem(w, r, http.StatusBadRequest, "The form does not parse: "+err.Error())
	return false
}

// origin is the console's origin as browsers reach it: Options.PublicURL's,
// else the request's own (https when the listener is).
func (h *Handler) origin(r *http.Request) string {
	if h.opts.PublicURL != "" {
		if u, err := url.Parse(h.opts.PublicURL); err == nil && u.Host != "" {
			return u.Scheme + "://" + u.Host
		}
	}
	scheme := "http"
	if r.TLS != nil || h.opts.Secure {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// crossSite says why r, a POST, is not from a page of the console's own
// origin ("" when nothing says it is not). A browser sends Origin on a
// POST, and Sec-Fetch-Site in any recent version; a request with neither
// is no browser's (curl), and then the CSRF token alone decides.
func (h *Handler) crossSite(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, h.origin(r)) {
		return "This request came from a page of another origin (" + o + "), not the console's own: refused."
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		return "This request came from a page of another site (Sec-Fetch-Site: " + s + "), not the console's own: refused."
	}
	return ""
}

// loginPageData is what the login page shows.
type loginPageData struct {
	// Token: the static-token form is offered.
	Token bool
	// Issuer and OAuthStart: the "Sign in with" link, when OAuth login
	// is configured.
	Issuer, OAuthStart string
	// Next is where a sign-in goes after (a console path).
	Next string
	// Problem is why the last attempt failed, as text.
	Problem string
	// Nothing: no way to sign in is configured.
	Nothing bool
}

// loginData is the login page for next, with problem.
func (h *Handler) loginData(next, problem string) *loginPageData {
	d := &loginPageData{Token: h.opts.Token != "", Next: safeNext(next), Problem: problem}
	if o := h.opts.OAuth; o != nil {
		d.Issuer = o.Issuer
		d.OAuthStart = Path + "/oauth/start"
		if d.Next != defaultNext {
			d.OAuthStart += "?" + url.Values{"next": {d.Next}}.Encode()
		}
	}
	d.Nothing = !d.Token && d.Issuer == ""
	return d
}

// loginPage serves GET /console/login: the login link's sign-in when the
// URL has a key, else the login page (or, already signed in, where next
// says).
func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	next := safeNext(q.Get("next"))
	if q.Has("key") {
		h.keyLogin(w, r, q.Get("key"), next)
		return
	}
	if h.signedIn(r) != nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	h.render(w, http.StatusOK, "login", h.loginData(next, ""))
}

// keyLogin signs in the local user of the login link. A link followed
// from another site is refused before its key is checked or counted: any
// page the user visits could otherwise spend the failed sign-ins' budget
// with <img src=".../console/login?key=x"> and lock the link and the
// token out. Opened from a terminal, a log viewer or the address bar, a
// browser sends Sec-Fetch-Site none (or no such header).
func (h *Handler) keyLogin(w http.ResponseWriter, r *http.Request, key, next string) {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		h.authProblem(w, r, http.StatusForbidden, "The login link was followed from another site: "+
			"open it directly (paste it into the address bar), as plughost printed it in its log.")
		return
	}
	if !h.mayTry(w, r, next) {
		return
	}
	if h.opts.LoginKey == "" || !secretEqual(key, h.opts.LoginKey) {
		h.failed(r, "a wrong login key")
		h.render(w, http.StatusForbidden, "login", h.loginData(next,
			"This login link is not valid (it may be from an earlier run of plughost): open the one plughost printed in its log."))
		return
	}
	h.startSession(w, r, &user{caller: Caller{Local: true}, name: loginLinkUser, full: true})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// tokenLogin serves POST /console/login: the static token pasted into
// the login form (field "token").
func (h *Handler) tokenLogin(w http.ResponseWriter, r *http.Request) {
	if why := h.crossSite(r); why != "" {
		h.authProblem(w, r, http.StatusForbidden, why)
		return
	}
	if !h.parseForm(w, r) {
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	if h.opts.Token == "" {
		h.render(w, http.StatusForbidden, "login", h.loginData(next, "This console has no static token to sign in with."))
		return
	}
	if !h.mayTry(w, r, next) {
		return
	}
	if !secretEqual(r.PostForm.Get("token"), h.opts.Token) {
		h.failed(r, "a wrong token")
		h.render(w, http.StatusForbidden, "login", h.loginData(next, "That is not the token plughost serve was given."))
		return
	}
	h.startSession(w, r, &user{name: tokenHolder, full: true})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// mayTry reports whether a token or key sign-in may be checked now;
// false once it has answered 429 (the failed sign-ins' limit is spent).
func (h *Handler) mayTry(w http.ResponseWriter, r *http.Request, next string) bool {
	wait := h.failures.wait()
	if wait == 0 {
		return true
	}
	secs := int((wait + time.Second - 1) / time.Second)
	h.log.Warn("console sign-in not checked: too many failed sign-ins", "remote", r.RemoteAddr, "retry_after_s", secs)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	h.render(w, http.StatusTooManyRequests, "login", h.loginData(next,
		"Too many failed sign-ins: try again in "+strconv.Itoa(secs)+" s."))
	return false
}

// failed counts and logs a failed sign-in; what was tried is never
// logged.
func (h *Handler) failed(r *http.Request, what string) {
	h.failures.failed()
	h.log.Warn("console sign-in refused: "+what, "remote", r.RemoteAddr, "user_agent", r.UserAgent())
}

// secretEqual compares a presented secret with the right one in constant
// time (of their hashes, so that not even the length shows).
func secretEqual(got, want string) bool {
	g, wt := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], wt[:]) == 1
}

// logout serves POST /console/logout: the session ends, its cookie is
// deleted.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	u := h.checkPost(w, r)
	if u == nil {
		return
	}
	c, _ := r.Cookie(h.cookieName(sessionCookie)) // checkPost found it
	h.sess.end(c.Value)
	h.setCookie(w, sessionCookie, "", Path, http.SameSiteStrictMode, -1)
	h.log.Info("console sign-out", "user", u.name)
	http.Redirect(w, r, Path+"/login", http.StatusSeeOther)
}

// defaultNext is where a sign-in goes when nothing else was asked.
const defaultNext = Path + "/plugins"

// safeNext is next when it is a page of the console (a path under Path,
// clean, no other origin, not a sign-in route), else defaultNext: a
// sign-in never sends the browser elsewhere (no open redirect).
// url.Parse refuses control characters; what it returns is re-encoded,
// so a backslash (which browsers read as a slash) cannot make
// "/console/\evil" a path to another host.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		path.Clean(u.Path) != u.Path || !strings.HasPrefix(u.Path, Path+"/") {
		return defaultNext
	}
	switch {
	case u.Path == Path+"/login", u.Path == Path+"/logout", strings.HasPrefix(u.Path, Path+"/oauth/"):
		return defaultNext
	}
	u.Fragment = ""
	return u.RequestURI()
}

// authProblem answers status with a page saying why (text), and logs it.
func (h *Handler) authProblem(w http.ResponseWriter, r *http.Request, status int, why string) {
	h.log.Warn("console request refused", "method", r.Method, "path", r.URL.Path, "status", status,
		"why", why, "remote", r.RemoteAddr)
	h.render(w, status, "auth-problem", &authProblemData{Title: http.StatusText(status), Problem: why})
}

// authProblemData is what the problem page shows.
type authProblemData struct {
	Title, Problem string
}

// checkAuthOptions refuses sign-in options that cannot work, naming the
// field, so that plughost serve fails at start rather than at the first
// sign-in.
func checkAuthOptions(o *Options) error {
	if o.PublicURL != "" {
		if u, err := url.Parse(o.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("console: PublicURL %q: want the http(s) URL browsers reach the console's listener by", o.PublicURL)
		}
	}
	if a := o.OAuth; a != nil {
		switch u, err := url.Parse(a.Issuer); {
		case err != nil || u.Host == "" || !(u.Scheme == "https" || u.Scheme == "http" && isLoopback(u.Hostname())):
			return fmt.Errorf("console: OAuth issuer %q: want an https URL (http only on loopback)", a.Issuer)
		case a.ClientID == "":
			return errors.New("console: OAuth sign-in needs the console's client id at the issuer")
		case a.Verify == nil:
			return errors.New("console: OAuth sign-in needs Verify, to check the tokens it gets")
		}
	}
	return nil
}
