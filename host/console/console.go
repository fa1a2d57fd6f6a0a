// Package console is plughost's console: pages in a browser that show
// what the host runs (plugins, their sandbox and grants, what is held for
// approval and why, who is connected, which tools are called) and let a
// person approve or revoke a plugin, as plughost approve and revoke do.
//
// plughost serve mounts a Handler at /console on its HTTP listener, or on
// a loopback listener of its own (--console-listen) beside stdio. The
// pages are rendered on the server with html/template (every string a
// plugin or client wrote is text, escaped for where it lands); one small
// script of our own, served from the binary, keeps a page current through
// Server-Sent Events. No front-end library and no request to any other
// origin: the Content-Security-Policy allows only 'self'.
//
// Who may look and who may approve:
//   - the holder of the static token (pasted once into the login form), and
//     the local user of the login link printed in the log (loopback
//     listeners only), may do everything, as they may call every tool;
//   - a person signed in through the configured authorization server
//     (authorization code with PKCE) is a caller as an OAuth client is, and
//     the access rules decide: an allow rule of item kind "console" lets
//     them see the pages, one of kind "approve" lets them approve and revoke.
//     The rules in force are asked on every request.
//
// Every change is a POST carrying the session's CSRF token from a page of
// the console's own origin; the session cookie is HttpOnly and
// SameSite=Strict, and lives in this process only.
package console

import (
	"context"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Path is where plughost serve mounts the console.
const Path = "/console"

// Options configure a Handler. Nil fields mean defaults, as documented.
type Options struct {
	// Source is what the pages show and what approve and revoke do.
	// Required.
	Source Source
	// Token is the static token (serve --token): pasting it into the
	// login form signs its holder in with every right. Empty: no token
	// login.
	Token string
	// LoginKey, when not empty, is the key of the login link
	// (Path+"/login?key=KEY"), which signs in the local user with every
	// right. plughost serve sets one on loopback listeners only and
	// prints the link in its log. See LoginURL.
	LoginKey string
	// OAuth, when not nil, adds "Sign in with" the authorization server:
	// the authorization code flow with PKCE.
	OAuth *OAuthLogin
	// Allowed decides whether an OAuth-signed-in caller may do kind:
	// "console" (see the pages; plugin is "") or "approve" (approve and
	// revoke plugin; asked for each plugin a page would show a button
	// for, and again on the POST). It is asked on every request, so a
	// reload's rules apply at once. Nil: no OAuth caller may do anything.
	// Token and login-link users are not asked.
	Allowed func(c *Caller, kind, plugin string) bool
	// PublicURL is the URL browsers reach the console's listener by
	// ("https://plughost.example.com", behind a proxy): its origin is
	// the one a POST's Origin must name, and the OAuth redirect URI is
	// under it. Empty: the request's own (its Host, https when Secure).
	PublicURL string
	// Secure: the listener speaks HTTPS, so cookies are marked Secure
	// (and named with the __Host- prefix).
	Secure bool
	// MaxSessions bounds the signed-in sessions kept (default 256); the
	// oldest is dropped for a new one past it. SessionTTL is how long a
	// session lives without a request (default 8 h); an OAuth session
	// ends no later than its access token expires.
	MaxSessions int
	SessionTTL  time.Duration
	// Logger: the console's log (sign-ins, refusals, approvals).
	// Default: none.
	Logger hclog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// OAuthLogin is the authorization server people sign in with.
type OAuthLogin struct {
	// Issuer is the authorization server (one of the auth block's
	// issuers); its metadata (RFC 8414, else OpenID Connect discovery)
	// names its authorization and token endpoints.
	Issuer string
	// ClientID (and ClientSecret, for a confidential client; empty for
	// a public one) is the console's registration at the issuer, whose
	// redirect URI is the console's Path+"/oauth/callback" at the URL
	// the browser reaches plughost by.
	ClientID, ClientSecret string
	// Resource is the MCP endpoint's resource (RFC 8707): the access
	// token is asked for it, so that Verify accepts it.
	Resource string
	// Scopes are asked with it (the auth block's scopes).
	Scopes []string
	// Verify checks the access token the code was exchanged for, as the
	// MCP endpoint checks a client's (oauth.Verifier.Verify), and
	// returns who it speaks for and when it expires.
	Verify func(ctx context.Context, accessToken string) (*Caller, time.Time, error)
	// HTTPClient reaches the issuer; default a client with a 10 s
	// timeout.
	HTTPClient *http.Client
}
