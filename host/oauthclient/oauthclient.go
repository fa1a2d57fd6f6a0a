// Package oauthclient makes plughost an OAuth 2.1 client of the remote MCP
// servers it wraps (package declared's "oauth" member): the other side of
// package oauth, which makes plughost a resource server.
//
// A remote server that wants a token answers 401 with a WWW-Authenticate
// header naming its Protected Resource Metadata (RFC 9728), which names its
// authorization server, whose metadata (RFC 8414, or OpenID Connect
// discovery) names the endpoints. Every request then carries an access
// token minted for that server alone (RFC 8707's resource parameter on
// every token request). Three ways to get one:
//
//   - [ClientCredentials]: a pre-registered confidential client asks for
//     its own token (the client credentials grant); no one logs in.
//   - [Login]: an operator logs in once in a browser (`plughost login
//     NAME`): the authorization code grant with PKCE, a loopback redirect
//     on 127.0.0.1, and the client chosen as the specification says — a
//     Client ID Metadata Document where the authorization server supports
//     them, else the pre-registered client, else one registered on the spot
//     (Dynamic Client Registration). The tokens go to a [Store] file.
//   - [Stored]: the running host's side of a login: the access token from
//     the store, refreshed before it expires and written back, so that the
//     next start uses the new one.
//
// Each is an [auth.OAuthHandler] of the go-sdk, and [Transport] puts any
// of them in front of an http.RoundTripper: it adds the token to every
// request, and on a 401, or a 403 with error="insufficient_scope" (step-up,
// the server wants more scopes), has the handler authorize and sends the
// request once more. A RoundTripper rather than the go-sdk's
// StreamableClientTransport.OAuthHandler, so that the old HTTP+SSE
// transport, which has no such field, is served by the same code.
//
// Who does what: the go-sdk's oauthex fetches and checks the metadata
// documents (PRM's resource must be the server's, AS metadata's issuer the
// one asked, PKCE advertised, no dangerous URL schemes) and registers
// clients; its auth.AuthorizationCodeHandler runs the whole login (client
// choice, PKCE, state, the RFC 9207 iss check, step-up's scope union);
// golang.org/x/oauth2 makes the token requests and refreshes. This package
// only chooses, stores and explains. Nothing cryptographic is done here.
//
// Errors name the cause — the server or authorization server that failed
// and how, the OAuth error code and description of a refused grant, and
// what the operator can do (`plughost login NAME`) — and never a token or
// a secret: oauth2's RetrieveError, whose text holds the authorization
// server's whole answer, is reduced to its error code and description.
package oauthclient

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Transport sends requests through Base with Handler's token, and lets
// Handler authorize once when the server refuses one. It is safe for
// concurrent use when Handler is.
type Transport struct {
	Handler auth.OAuthHandler
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
}

var _ http.RoundTripper = (*Transport)(nil)

// RoundTrip implements http.RoundTripper. A request refused with 401, or
// 403 insufficient_scope, is sent again once after Handler.Authorize
// succeeds (its body is replayed through GetBody; a request whose body
// cannot be replayed gets the refusal as it came). When Authorize fails,
// its error is the request's.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	r, err := t.authorized(req, req.Body)
	if err != nil {
		return nil, err
	}
	resp, err := base.RoundTrip(r)
	if err != nil || !refusal(resp) || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		return resp, err
	}
	if err := t.Handler.Authorize(req.Context(), r, resp); err != nil {
		return nil, err
	}
	var body io.ReadCloser
	if req.GetBody != nil {
		if body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	if r, err = t.authorized(req, body); err != nil {
		return nil, err
	}
	return base.RoundTrip(r)
}

// authorized is a copy of req with body and the handler's current token.
func (t *Transport) authorized(req *http.Request, body io.ReadCloser) (*http.Request, error) {
	r := req.Clone(req.Context())
	r.Body = body
	ts, err := t.Handler.TokenSource(req.Context())
	if err != nil {
		return nil, err
	}
	if ts != nil {
		tok, err := ts.Token()
		if err != nil {
			return nil, err
		}
		r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	}
	return r, nil
}

// refusal reports whether resp is one an authorization may cure: 401, or
// 403 whose challenge says insufficient_scope (another 403 is the
// server's last word).
func refusal(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return true
	case http.StatusForbidden:
		return challengeParam(resp, "error") == "insufficient_scope"
	}
	return false
}

// challengeParam is the parameter name of resp's Bearer challenge, "" when
// there is none or the header does not parse.
func challengeParam(resp *http.Response, name string) string {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return ""
	}
	for _, c := range cs {
		if c.Scheme == "bearer" {
			return c.Params[name]
		}
	}
	return ""
}

// drain reads what is left of resp's body (so that its connection is
// reused) and closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// ErrLoginNeeded is wrapped by the errors of a [Stored] handler that only
// `plughost login NAME` can cure: no login yet, a login for another
// server, a refresh token refused or expired, a scope the login lacks.
var ErrLoginNeeded = errors.New("login needed")

// explain turns a token request's failure into words that hold no token:
// an oauth2.RetrieveError (whose text quotes the whole answer) becomes its
// OAuth error code and description, or its HTTP status.
func explain(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return err
	}
	var b strings.Builder
	if re.ErrorCode != "" {
		b.WriteString(re.ErrorCode)
		if re.ErrorDescription != "" {
			fmt.Fprintf(&b, " (%s)", clip(re.ErrorDescription, 200))
		}
	} else if re.Response != nil {
		b.WriteString(re.Response.Status)
	} else {
		b.WriteString("an answer that is not a token")
	}
	return &refused{b.String()}
}

// refused is a token request the authorization server answered with an
// error, described without its body.
type refused struct{ why string }

func (e *refused) Error() string { return "the authorization server refused: " + e.why }

// clip cuts s to n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// union is a followed by the members of b it lacks, without duplicates.
func union(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	seen := make(map[string]bool, len(a)+len(b))
	for _, s := range append(append([]string(nil), a...), b...) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// grantedScopes are the scopes tok says it holds ("scope" of the token
// response), or nil when it does not say.
func grantedScopes(tok *oauth2.Token) []string {
	if s, ok := tok.Extra("scope").(string); ok {
		return strings.Fields(s)
	}
	return nil
}

// authStyle is how to authenticate to a token endpoint that supports
// methods: client_secret_post before client_secret_basic (OAuth 2.1's
// preference), else oauth2's auto-detection.
func authStyle(methods []string) oauth2.AuthStyle {
	for _, m := range methods {
		if m == "client_secret_post" {
			return oauth2.AuthStyleInParams
		}
	}
	for _, m := range methods {
		if m == "client_secret_basic" {
			return oauth2.AuthStyleInHeader
		}
	}
	return oauth2.AuthStyleAutoDetect
}
