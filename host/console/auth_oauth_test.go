package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/oauth"
	"github.com/plughost/plughost/host/oauth/oauthtest"
)

const (
	testConsoleClient = "plughost-console"
	testResource      = "http://127.0.0.1:1/mcp"
)

// oauthConsole is a console whose OAuth sign-in is at as (a public
// client), its tokens checked by a real oauth.Verifier; allowed says who
// may see the console.
func oauthConsole(t *testing.T, as *oauthtest.Server, allowed func(*Caller, string, string) bool, maxPending int) *authConsole {
	t.Helper()
	as.AddClient(testConsoleClient, "")
	v, err := oauth.New(&oauth.Options{Issuers: []string{as.URL}, Resource: testResource})
	if err != nil {
		t.Fatal(err)
	}
	return newAuthConsole(t, Options{Allowed: allowed, OAuth: &OAuthLogin{
		Issuer: as.URL, ClientID: testConsoleClient, Resource: testResource, Scopes: []string{"mcp:tools"},
		MaxPendingLogins: maxPending,
		Verify: func(ctx context.Context, token string) (*Caller, time.Time, error) {
			c, err := v.Verify(ctx, token)
			if err != nil {
				return nil, time.Time{}, err
			}
			return &Caller{Subject: c.Subject, ClientID: c.ClientID, Issuer: c.Issuer, Scopes: c.Scopes, Claims: c.Claims}, c.Expiry, nil
		},
	}})
}

func authAllowEveryone(*Caller, string, string) bool { return true }

// startOAuth follows the console's start to the authorization server,
// which answers (as a person who consents) with the redirect back; it
// returns the callback URL.
func startOAuth(t *testing.T, c *authConsole, b *http.Client, next string) string {
	t.Helper()
	u := c.srv.URL + Path + "/oauth/start"
	if next != "" {
		u += "?next=" + url.QueryEscape(next)
	}
	a := authGet(t, b, u)
	if a.status != http.StatusFound {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	a = authGet(t, b, a.header.Get("Location"))
	if a.status != http.StatusFound {
		t.Fatalf("authorize: %d %s", a.status, a.body)
	}
	return a.header.Get("Location")
}

func TestOAuthSignIn(t *testing.T) {
	for _, openIDOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "RFC 8414 metadata", true: "OpenID Connect discovery"}[openIDOnly], func(t *testing.T) {
			as := oauthtest.New(t)
			if openIDOnly {
				as.OpenIDOnly()
			}
			var asked []string
			c := oauthConsole(t, as, func(cl *Caller, kind, plugin string) bool {
				asked = append(asked, cl.Subject+" "+kind)
				return true
			}, 0)
			b := authBrowser(t)

			// The login page offers the issuer.
			if a := authGet(t, b, c.srv.URL+Path+"/login?next=%2Fconsole%2Fheld"); !strings.Contains(a.body, `data-testid="login-oauth" href="/console/oauth/start?next=%2Fconsole%2Fheld"`) ||
				!strings.Contains(a.body, "Sign in with "+as.URL) {
				t.Fatalf("the login page: %s", a.body)
			}

			a := authGet(t, b, c.srv.URL+Path+"/oauth/start?next=%2Fconsole%2Fheld")
			if a.status != http.StatusFound {
				t.Fatalf("start: %d %s", a.status, a.body)
			}
			to, _ := url.Parse(a.header.Get("Location"))
			q := to.Query()
			for k, want := range map[string]string{
				"response_type": "code", "client_id": testConsoleClient, "redirect_uri": c.srv.URL + Path + "/oauth/callback",
				"scope": "mcp:tools", "code_challenge_method": "S256", "resource": testResource,
			} {
				if q.Get(k) != want {
					t.Errorf("the authorization request's %s = %q, want %q", k, q.Get(k), want)
				}
			}
			if to.Scheme+"://"+to.Host+to.Path != as.URL+"/authorize" || len(q.Get("state")) != 43 || len(q.Get("code_challenge")) != 43 {
				t.Fatalf("the authorization request: %s", to)
			}
			if set := a.header.Get("Set-Cookie"); !strings.Contains(set, "plughost_console_login=") ||
				!strings.Contains(set, "SameSite=Lax") || !strings.Contains(set, "HttpOnly") || !strings.Contains(set, "Path=/console/oauth/") {
				t.Fatalf("the login binding cookie: %q", set)
			}

			// The server checks the challenge against the verifier the
			// console sends with the code, and the resource of both.
			a = authGet(t, b, to.String())
			callback := a.header.Get("Location")
			a = authGet(t, b, callback)
			if a.status != http.StatusOK || !strings.Contains(a.body, `<meta http-equiv="refresh" content="0; url=/console/held">`) ||
				!strings.Contains(a.body, "Signed in as alice via "+as.URL) {
				t.Fatalf("the callback: %d %s", a.status, a.body)
			}
			u := c.sessionOf(t, b)
			if u == nil || u.name != "alice via "+as.URL || u.full || u.caller.Subject != "alice" || u.caller.ClientID != testConsoleClient {
				t.Fatalf("the OAuth user: %+v", u)
			}
			if d := time.Until(u.expires); d < 50*time.Minute || d > 61*time.Minute {
				t.Fatalf("the session should end with the token (an hour): in %v", d)
			}
			if strings.Join(asked, ",") != "alice console" {
				t.Fatalf("the rules were asked %q; want whether alice may see the console", asked)
			}
			if n := as.TokenRequests("authorization_code"); n != 1 {
				t.Fatalf("token requests: %d", n)
			}

			// A state is good once.
			if a := authGet(t, b, callback); a.status != http.StatusBadRequest || !strings.Contains(a.body, "used already") {
				t.Fatalf("the callback again: %d %s", a.status, a.body)
			}
		})
	}
}

func TestOAuthSignInInAnotherBrowserRefused(t *testing.T) {
	as := oauthtest.New(t)
	c := oauthConsole(t, as, authAllowEveryone, 0)
	attacker, victim := authBrowser(t), authBrowser(t)
	// The attacker starts a sign-in and has the victim's browser finish
	// it (login CSRF): the victim has no binding, or its own.
	callback := startOAuth(t, c, attacker, "")
	startOAuth(t, c, victim, "")
	a := authGet(t, victim, callback)
	if a.status != http.StatusForbidden || !strings.Contains(a.body, "not started in this browser") || c.sessionOf(t, victim) != nil {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if as.TokenRequests("authorization_code") != 0 {
		t.Fatal("the code was exchanged")
	}
	if !strings.Contains(c.logged(), "came to another browser") {
		t.Fatalf("the log should say so:\n%s", c.logged())
	}
}

func TestOAuthSignInRefusals(t *testing.T) {
	t.Run("the rules do not let the caller see the console", func(t *testing.T) {
		as := oauthtest.New(t)
		c := oauthConsole(t, as, func(*Caller, string, string) bool { return false }, 0)
		b := authBrowser(t)
		a := authGet(t, b, startOAuth(t, c, b, ""))
		if a.status != http.StatusForbidden || !strings.Contains(a.body, "the access rules do not let them see the console") || c.sessionOf(t, b) != nil {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
	t.Run("the issuer refuses the code", func(t *testing.T) {
		as := oauthtest.New(t)
		c := oauthConsole(t, as, authAllowEveryone, 0)
		b := authBrowser(t)
		callback := startOAuth(t, c, b, "")
		as.RefuseTokens("invalid_grant")
		a := authGet(t, b, callback)
		if a.status != http.StatusBadGateway || !strings.Contains(a.body, "refused the code: invalid_grant") || c.sessionOf(t, b) != nil {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
	t.Run("the issuer's error, hostile, shown as text", func(t *testing.T) {
		as := oauthtest.New(t)
		c := oauthConsole(t, as, authAllowEveryone, 0)
		b := authBrowser(t)
		callback, _ := url.Parse(startOAuth(t, c, b, ""))
		q := callback.Query()
		q.Del("code")
		q.Set("error", "access_denied")
		q.Set("error_description", `<script>alert(1)</script>"><img src=x onerror=alert(1)>`+strings.Repeat("x", 1000))
		callback.RawQuery = q.Encode()
		a := authGet(t, b, callback.String())
		if a.status != http.StatusForbidden || !strings.Contains(a.body, "refused the sign-in: access_denied (&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(1)&gt;xxx") ||
			strings.Contains(a.body, "<script") || strings.Contains(a.body, "<img") || strings.Contains(a.body, strings.Repeat("x", maxShownError)) {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
	t.Run("an error on a crafted callback, not shown", func(t *testing.T) {
		as := oauthtest.New(t)
		c := oauthConsole(t, as, authAllowEveryone, 0)
		crafted := c.srv.URL + Path + "/oauth/callback?" + url.Values{"state": {"made-up"}, "error": {"access_denied"},
			"error_description": {"Your session expired: call +1 555 0100 to restore access"}}.Encode()
		a := authGet(t, authBrowser(t), crafted)
		if a.status != http.StatusBadRequest || strings.Contains(a.body, "555 0100") || strings.Contains(a.body, "access_denied") {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
	t.Run("metadata naming another issuer", func(t *testing.T) {
		as := oauthtest.New(t)
		c := oauthConsole(t, as, authAllowEveryone, 0)
		c.h.opts.OAuth.Issuer = as.URL + "/"
		a := authGet(t, authBrowser(t), c.srv.URL+Path+"/oauth/start")
		if a.status != http.StatusBadGateway || !strings.Contains(a.body, "names the issuer") {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
	t.Run("no OAuth configured", func(t *testing.T) {
		c := newAuthConsole(t, Options{})
		if a := authGet(t, authBrowser(t), c.srv.URL+Path+"/oauth/start"); a.status != http.StatusNotFound {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
}

func TestPendingOAuthSignInsAreBounded(t *testing.T) {
	as := oauthtest.New(t)
	c := oauthConsole(t, as, authAllowEveryone, 2)
	b := authBrowser(t)
	first := startOAuth(t, c, b, "")
	startOAuth(t, c, b, "")
	a := authGet(t, b, c.srv.URL+Path+"/oauth/start")
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || !strings.Contains(a.body, "Too many sign-ins are in progress (2") {
		t.Fatalf("past the bound: %d %s", a.status, a.body)
	}
	// Ten minutes on, they have expired: room again, and the first is
	// no good any more.
	c.clock.advance(pendingLoginTTL)
	startOAuth(t, c, b, "")
	if a := authGet(t, b, first); a.status != http.StatusBadRequest {
		t.Fatalf("an expired sign-in: %d %s", a.status, a.body)
	}
}
