package console

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// authClock is a clock the test moves.
type authClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *authClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *authClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// authConsole is a console under test on a loopback server, with its
// log and clock.
type authConsole struct {
	h     *Handler
	srv   *httptest.Server
	log   *bytes.Buffer
	logMu *sync.Mutex
	clock *authClock
}

// authLogWriter serialises the log's writes (the server's goroutines).
type authLogWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l authLogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// newAuthConsole serves a Handler of o (its Source a stand-in that the
// sign-in routes never ask).
func newAuthConsole(t *testing.T, o Options) *authConsole {
	t.Helper()
	c := &authConsole{log: &bytes.Buffer{}, logMu: &sync.Mutex{}, clock: &authClock{t: time.Now()}}
	o.Source = struct{ Source }{}
	o.Now = c.clock.now
	o.Logger = hclog.New(&hclog.LoggerOptions{Output: authLogWriter{c.logMu, c.log}, Level: hclog.Info})
	h, err := New(&o)
	if err != nil {
		t.Fatal(err)
	}
	c.h = h
	c.srv = httptest.NewServer(h)
	t.Cleanup(c.srv.Close)
	return c
}

func (c *authConsole) logged() string {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	return c.log.String()
}

// authBrowser is a client with a cookie jar that does not follow redirects.
func authBrowser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// authAnswer is a response read whole.
type authAnswer struct {
	status int
	header http.Header
	body   string
}

func authDo(t *testing.T, b *http.Client, req *http.Request) authAnswer {
	t.Helper()
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return authAnswer{resp.StatusCode, resp.Header, string(body)}
}

func authGet(t *testing.T, b *http.Client, u string) authAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return authDo(t, b, req)
}

// authPost sends form from the console's own page unless header says
// otherwise.
func authPost(t *testing.T, b *http.Client, u string, form url.Values, header http.Header) authAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	return authDo(t, b, req)
}

// sessionOf is the user b's session cookie signs in, nil for none.
func (c *authConsole) sessionOf(t *testing.T, b *http.Client) *user {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, c.srv.URL+Path+"/plugins", nil)
	u, _ := url.Parse(c.srv.URL + Path + "/")
	for _, ck := range b.Jar.Cookies(u) {
		req.AddCookie(ck)
	}
	return c.h.signedIn(req)
}

func TestLoginLinkSignsInTheLocalUser(t *testing.T) {
	c := newAuthConsole(t, Options{LoginKey: "the-right-key"})
	b := authBrowser(t)

	a := authGet(t, b, c.srv.URL+Path+"/login?key=not-the-key")
	if a.status != http.StatusForbidden || !strings.Contains(a.body, "This login link is not valid") {
		t.Fatalf("a wrong key: %d %s", a.status, a.body)
	}
	if c.sessionOf(t, b) != nil {
		t.Fatal("a wrong key signed in")
	}
	if log := c.logged(); !strings.Contains(log, "console sign-in refused: a wrong login key") || strings.Contains(log, "not-the-key") {
		t.Fatalf("the log should say a wrong key was tried, without it:\n%s", log)
	}

	// Followed from another site (an <img> of any page the user visits),
	// even the right key is refused, and no attempt is counted: a page
	// cannot spend the failed sign-ins' budget.
	for range 2 * failedBurst {
		req, err := http.NewRequest(http.MethodGet, c.srv.URL+Path+"/login?key=guess", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		if a := authDo(t, b, req); a.status != http.StatusForbidden || !strings.Contains(a.body, "followed from another site") {
			t.Fatalf("a login link from another site: %d %s", a.status, a.body)
		}
	}

	a = authGet(t, b, LoginURL(c.srv.URL, "the-right-key")+"&next="+url.QueryEscape(Path+"/plugins/a%20b?x=1"))
	if a.status != http.StatusSeeOther || a.header.Get("Location") != Path+"/plugins/a%20b?x=1" {
		t.Fatalf("the right key: %d, Location %q", a.status, a.header.Get("Location"))
	}
	set := a.header.Get("Set-Cookie")
	for _, want := range []string{"plughost_console=", "Path=/console", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(set, want) {
			t.Errorf("the session cookie %q lacks %s", set, want)
		}
	}
	u := c.sessionOf(t, b)
	if u == nil || u.name != "local user (login link)" || !u.full || !u.caller.Local || len(u.csrf) != 43 {
		t.Fatalf("the login link's user: %+v", u)
	}
	// Signed in, the login page sends the browser on.
	if a := authGet(t, b, c.srv.URL+Path+"/login"); a.status != http.StatusSeeOther || a.header.Get("Location") != defaultNext {
		t.Fatalf("the login page when signed in: %d %q", a.status, a.header.Get("Location"))
	}
}

func TestTokenLogin(t *testing.T) {
	c := newAuthConsole(t, Options{Token: "s3cret-token"})
	b := authBrowser(t)
	if a := authGet(t, b, c.srv.URL+Path+"/login"); a.status != http.StatusOK ||
		!strings.Contains(a.body, `data-testid="login-token"`) || strings.Contains(a.body, `data-testid="login-oauth"`) {
		t.Fatalf("the login page: %d %s", a.status, a.body)
	}
	login := c.srv.URL + Path + "/login"

	a := authPost(t, b, login, url.Values{"token": {"guess"}}, nil)
	if a.status != http.StatusForbidden || !strings.Contains(a.body, "That is not the token") || c.sessionOf(t, b) != nil {
		t.Fatalf("a wrong token: %d %s", a.status, a.body)
	}
	if log := c.logged(); !strings.Contains(log, "console sign-in refused: a wrong token") || strings.Contains(log, "guess") {
		t.Fatalf("the log should say a wrong token was tried, without it:\n%s", log)
	}

	a = authPost(t, b, login, url.Values{"token": {"s3cret-token"}, "next": {"https://evil.example/"}},
		http.Header{"Origin": {c.srv.URL}, "Sec-Fetch-Site": {"same-origin"}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != defaultNext {
		t.Fatalf("the right token: %d, Location %q (another origin's next must not be followed)", a.status, a.header.Get("Location"))
	}
	if u := c.sessionOf(t, b); u == nil || u.name != "the static token's holder" || !u.full || u.caller.Local {
		t.Fatalf("the token's holder: %+v", u)
	}
	if log := c.logged(); strings.Contains(log, "s3cret-token") {
		t.Fatalf("the log holds the token:\n%s", log)
	}
}

func TestCrossSiteSignInRefused(t *testing.T) {
	c := newAuthConsole(t, Options{Token: "s3cret-token"})
	for name, header := range map[string]http.Header{
		"another Origin":            {"Origin": {"https://evil.example"}},
		"an opaque Origin":          {"Origin": {"null"}},
		"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": {"cross-site"}},
		"Sec-Fetch-Site same-site":  {"Sec-Fetch-Site": {"same-site"}},
		"another port of this host": {"Origin": {"http://127.0.0.1:1"}},
	} {
		t.Run(name, func(t *testing.T) {
			b := authBrowser(t)
			a := authPost(t, b, c.srv.URL+Path+"/login", url.Values{"token": {"s3cret-token"}}, header)
			if a.status != http.StatusForbidden || !strings.Contains(a.body, "not the console&#39;s own") || c.sessionOf(t, b) != nil {
				t.Fatalf("%d %s", a.status, a.body)
			}
		})
	}
}

// signIn signs b in with the login link and returns its CSRF token.
func (c *authConsole) signIn(t *testing.T, b *http.Client) string {
	t.Helper()
	if a := authGet(t, b, LoginURL(c.srv.URL, "k")); a.status != http.StatusSeeOther {
		t.Fatalf("signing in: %d %s", a.status, a.body)
	}
	return c.sessionOf(t, b).csrf
}

func TestPostsNeedTheSessionAndItsCSRFToken(t *testing.T) {
	c := newAuthConsole(t, Options{LoginKey: "k"})
	logout := c.srv.URL + Path + "/logout"
	b := authBrowser(t)
	csrf := c.signIn(t, b)
	other := authBrowser(t)
	otherCSRF := c.signIn(t, other)
	same := http.Header{"Origin": {c.srv.URL}, "Sec-Fetch-Site": {"same-origin"}}

	for _, tc := range []struct {
		name   string
		form   url.Values
		header http.Header
		want   string
	}{
		{"no csrf", url.Values{}, same, "CSRF token is missing"},
		{"a wrong csrf", url.Values{"csrf": {otherThan(csrf[0]) + csrf[1:]}}, same, "CSRF token is missing"},
		{"another session's csrf", url.Values{"csrf": {otherCSRF}}, same, "CSRF token is missing"},
		{"another origin", url.Values{"csrf": {csrf}}, http.Header{"Origin": {"https://evil.example"}}, "another origin"},
		{"a cross-site fetch", url.Values{"csrf": {csrf}}, http.Header{"Sec-Fetch-Site": {"cross-site"}}, "another site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := authPost(t, b, logout, tc.form, tc.header)
			if a.status != http.StatusForbidden || !strings.Contains(a.body, tc.want) {
				t.Fatalf("%d %s", a.status, a.body)
			}
			if c.sessionOf(t, b) == nil {
				t.Fatal("a refused logout ended the session")
			}
		})
	}
	if a := authPost(t, authBrowser(t), logout, url.Values{"csrf": {csrf}}, same); a.status != http.StatusForbidden ||
		!strings.Contains(a.body, "not signed in") {
		t.Fatalf("a POST without a session: %d %s", a.status, a.body)
	}
	// An oversized form, in process (a server closing the connection
	// on it waits half a second for the client to stop sending).
	big := httptest.NewRequest(http.MethodPost, logout, strings.NewReader(url.Values{"csrf": {strings.Repeat("x", maxFormBytes)}}.Encode()))
	big.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	u, _ := url.Parse(c.srv.URL + Path + "/")
	for _, ck := range b.Jar.Cookies(u) {
		big.AddCookie(ck)
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, big)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "larger than 64 KiB") {
		t.Fatalf("an oversized form: %d %s", w.Code, w.Body)
	}

	a := authPost(t, b, logout, url.Values{"csrf": {csrf}}, same)
	if a.status != http.StatusSeeOther || a.header.Get("Location") != Path+"/login" {
		t.Fatalf("logout: %d %s", a.status, a.body)
	}
	if c.sessionOf(t, b) != nil || c.sessionOf(t, other) == nil {
		t.Fatal("logout should end this session and only it")
	}
}

func TestSignInFirst(t *testing.T) {
	c := newAuthConsole(t, Options{})
	w := httptest.NewRecorder()
	c.h.signInFirst(w, httptest.NewRequest(http.MethodGet, Path+"/plugins/x?y=1", nil))
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != Path+"/login?next=%2Fconsole%2Fplugins%2Fx%3Fy%3D1" {
		t.Fatalf("a GET: %d %q", w.Code, w.Header().Get("Location"))
	}
	w = httptest.NewRecorder()
	c.h.signInFirst(w, httptest.NewRequest(http.MethodPost, Path+"/approve", nil))
	if w.Code != http.StatusForbidden {
		t.Fatalf("a POST: %d", w.Code)
	}
	// With no way to sign in configured, the login page says so.
	if a := authGet(t, authBrowser(t), c.srv.URL+Path+"/login"); a.status != http.StatusOK || !strings.Contains(a.body, "No sign-in is configured") {
		t.Fatalf("%d %s", a.status, a.body)
	}
}

func TestSessionsEndAndAreBounded(t *testing.T) {
	clock := &authClock{t: time.Now()}
	s := newSessions(2, time.Hour, clock.now)
	a, _ := s.create(&user{name: "a"})
	b, _ := s.create(&user{name: "b", expires: clock.now().Add(10 * time.Minute)})
	if s.get(a) == nil || s.get(b) == nil || s.get("") != nil || s.get(a+"x") != nil {
		t.Fatal("lookups")
	}

	clock.advance(10 * time.Minute)
	if s.get(b) != nil {
		t.Fatal("a session outlived its expiry (an OAuth token's)")
	}
	if s.get(a) == nil {
		t.Fatal("a session used 10 minutes ago ended (the idle TTL is an hour)")
	}
	clock.advance(59 * time.Minute)
	c, dropped := s.create(&user{name: "c"})
	if dropped != 0 || s.get(a) == nil {
		t.Fatalf("room was there (b had ended): dropped %d", dropped)
	}
	clock.advance(time.Minute)
	// Full (a, c): a new one drops the least recently used, c.
	s.get(a)
	d, dropped := s.create(&user{name: "d"})
	if dropped != 1 || s.get(c) != nil || s.get(a) == nil || s.get(d) == nil || s.len() != 2 {
		t.Fatalf("past the bound: dropped %d, kept %d", dropped, s.len())
	}
	clock.advance(time.Hour)
	if s.get(a) != nil || s.get(d) != nil {
		t.Fatal("sessions idle for the TTL should end")
	}
}

func TestMaxSessionsThroughTheHandler(t *testing.T) {
	c := newAuthConsole(t, Options{LoginKey: "k", MaxSessions: 1})
	first, second := authBrowser(t), authBrowser(t)
	c.signIn(t, first)
	c.signIn(t, second)
	if c.sessionOf(t, first) != nil || c.sessionOf(t, second) == nil {
		t.Fatal("with MaxSessions 1, the second sign-in should end the first")
	}
	if !strings.Contains(c.logged(), "console sessions full") {
		t.Fatalf("the log should say a session was ended for room:\n%s", c.logged())
	}
}

func TestFailedSignInsAreBounded(t *testing.T) {
	c := newAuthConsole(t, Options{Token: "right", LoginKey: "k"})
	b := authBrowser(t)
	for range failedBurst {
		if a := authPost(t, b, c.srv.URL+Path+"/login", url.Values{"token": {"wrong"}}, nil); a.status != http.StatusForbidden {
			t.Fatalf("a wrong token: %d", a.status)
		}
	}
	// Spent: not even the right token (or key) is checked now.
	a := authPost(t, b, c.srv.URL+Path+"/login", url.Values{"token": {"right"}}, nil)
	if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") != "30" || !strings.Contains(a.body, "Too many failed sign-ins") {
		t.Fatalf("past the limit: %d %q %s", a.status, a.header.Get("Retry-After"), a.body)
	}
	if a := authGet(t, b, LoginURL(c.srv.URL, "k")); a.status != http.StatusTooManyRequests || c.sessionOf(t, b) != nil {
		t.Fatalf("the login link past the limit: %d", a.status)
	}
	c.clock.advance(failedEvery)
	if a := authPost(t, b, c.srv.URL+Path+"/login", url.Values{"token": {"right"}}, nil); a.status != http.StatusSeeOther {
		t.Fatalf("after %v one more may be tried: %d", failedEvery, a.status)
	}
}

func TestSecureCookies(t *testing.T) {
	c := newAuthConsole(t, Options{LoginKey: "k", Secure: true})
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "https://plughost.example"+Path+"/login?key=k", nil))
	set := w.Header().Get("Set-Cookie")
	for _, want := range []string{"__Host-plughost_console=", "Path=/;", "Secure", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(set, want) {
			t.Errorf("the session cookie %q lacks %s", set, want)
		}
	}
}

func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{
		"":                               defaultNext,
		"/console/held":                  "/console/held",
		"/console/plugins/a%2Fb?x=1#f":   "/console/plugins/a%2Fb?x=1",
		"/console":                       defaultNext,
		"/consolex/y":                    defaultNext,
		"/console/../metrics":            defaultNext,
		"//evil.example/console/x":       defaultNext,
		"/\\evil.example":                defaultNext,
		"https://evil.example/console/x": defaultNext,
		"javascript:alert(1)":            defaultNext,
		"/console/login?next=x":          defaultNext,
		"/console/oauth/start":           defaultNext,
		"/console/x\r\nSet-Cookie: a":    defaultNext,
		"///console/x":                   defaultNext,
		"/console/\\evil.example":        "/console/%5Cevil.example",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

func TestPublicURLIsTheOrigin(t *testing.T) {
	// Behind a proxy the browser's origin is the public one, not the
	// listener's.
	c := newAuthConsole(t, Options{Token: "t", PublicURL: "https://plughost.example.com/"})
	if a := authPost(t, authBrowser(t), c.srv.URL+Path+"/login", url.Values{"token": {"t"}},
		http.Header{"Origin": {"https://plughost.example.com"}}); a.status != http.StatusSeeOther {
		t.Fatalf("the public origin: %d %s", a.status, a.body)
	}
	if a := authPost(t, authBrowser(t), c.srv.URL+Path+"/login", url.Values{"token": {"t"}},
		http.Header{"Origin": {c.srv.URL}}); a.status != http.StatusForbidden {
		t.Fatalf("the listener's own origin, not the public one: %d %s", a.status, a.body)
	}
}

func TestAuthOptionsChecked(t *testing.T) {
	verify := func(context.Context, string) (*Caller, time.Time, error) { return nil, time.Time{}, nil }
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{PublicURL: "plughost.example.com"}, `PublicURL "plughost.example.com"`},
		{Options{OAuth: &OAuthLogin{Issuer: "http://auth.example.com", ClientID: "c", Verify: verify}}, "want an https URL"},
		{Options{OAuth: &OAuthLogin{Issuer: "https://auth.example.com", Verify: verify}}, "client id"},
		{Options{OAuth: &OAuthLogin{Issuer: "https://auth.example.com", ClientID: "c"}}, "needs Verify"},
	} {
		tc.o.Source = struct{ Source }{}
		if _, err := New(&tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one saying %q", tc.o, err, tc.want)
		}
	}
}

// otherThan is a token character that is not c: a token changed in its
// first character is another token whatever it started with.
func otherThan(c byte) string {
	if c == 'x' {
		return "y"
	}
	return "x"
}
