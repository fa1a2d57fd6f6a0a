package console

import (
	"bytes"
	"embed"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The pages' templates and the static assets (style sheet, script), in
// the binary.
var (
	//go:embed templates/*.html
	templateFS embed.FS
	//go:embed assets
	assetFS embed.FS
)

// Handler serves the console under Path. Build it with New; Close it
// when the listener stops.
type Handler struct {
	opts  Options
	log   hclog.Logger
	mux   *http.ServeMux
	pages *template.Template
	sess  *sessions // auth_sessions.go: the signed-in sessions
	// failures limits failed token and login-key sign-ins
	// (auth_limit.go); logins are the OAuth sign-ins in progress
	// (auth_oauth.go), nil without Options.OAuth.
	failures *failureLimit
	logins   *oauthLogins
	// events fans the Source's changes out to the pages' event streams
	// (events.go); Close ends them.
	events *eventHub
}

// New returns a console over o.Source.
func New(o *Options) (*Handler, error) {
	if o == nil || o.Source == nil {
		return nil, errors.New("console: a Source is required")
	}
	h := &Handler{opts: *o, log: o.Logger, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = hclog.NewNullLogger()
	}
	if h.opts.Now == nil {
		h.opts.Now = time.Now
	}
	if h.opts.MaxSessions <= 0 {
		h.opts.MaxSessions = 256
	}
	if h.opts.SessionTTL <= 0 {
		h.opts.SessionTTL = 8 * time.Hour
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	h.pages = pages
	if err := checkAuthOptions(&h.opts); err != nil {
		return nil, err
	}
	h.sess = newSessions(h.opts.MaxSessions, h.opts.SessionTTL, h.opts.Now)
	h.failures = newFailureLimit(h.opts.Now)
	h.logins = newOAuthLogins(h.opts.OAuth, h.opts.Now)
	h.routes()
	return h, nil
}

// NewLoginKey returns a new key for Options.LoginKey: 256 random bits,
// as a session id is made.
func NewLoginKey() string { return randomToken() }

// LoginURL is the login link for key on the listener at base
// ("http://127.0.0.1:8080").
func LoginURL(base, key string) string {
	return base + Path + "/login?key=" + url.QueryEscape(key)
}

// ServeHTTP serves a console request: every answer carries the security
// headers (securityHeaders) whatever it is.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	h.mux.ServeHTTP(w, r)
}

// securityHeaders are set on every answer: a Content-Security-Policy that
// allows only this origin's own script, style and connections (no inline
// script, no other origin, no framing), and no caching or sniffing.
func securityHeaders(hd http.Header) {
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the console's own form POSTs (Chromium does),
	// and the same-origin check refuses them; same-origin still sends
	// nothing to any other origin.
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
}

// render executes the page template name with data into w (status 200);
// a failure is logged and answered 500 without the partial page.
func (h *Handler) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := h.pages.ExecuteTemplate(&buf, name, data); err != nil {
		h.log.Error("rendering a console page", "page", name, "error", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
