package oauthclient

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// RefreshBefore is how long before its expiry a token is replaced: a
// request never leaves with a token about to expire on the way.
const RefreshBefore = time.Minute

// TokenTimeout bounds one request to a token endpoint (a grant, a
// refresh).
const TokenTimeout = 30 * time.Second

// ClientCredentials is the client credentials grant (RFC 6749 §4.4) of a
// pre-registered confidential client, as an [auth.OAuthHandler]: at the
// server's first 401 it discovers the authorization server and asks for a
// token for the server (RFC 8707 resource) with the scopes the server asks
// for, plus Scopes; a new one is asked for RefreshBefore its expiry. A
// 403 insufficient_scope (step-up) asks again with the union of the scopes
// held and those the challenge names; [Transport] then retries the request
// once. It is safe for concurrent use.
//
// It is the go-sdk's extauth.ClientCredentialsHandler but for the
// resource parameter, which that one does not send, and a lock.
type ClientCredentials struct {
	ClientID, ClientSecret string
	// Scopes are asked for on top of the server's.
	Scopes []string
	// ServerURL is the MCP endpoint, whose metadata is looked for; ""
	// means the URL of the refused request (the old SSE transport POSTs
	// to another URL than its endpoint: set it there).
	ServerURL string
	// HTTPClient reaches the metadata and the token endpoint; nil means
	// http.DefaultClient.
	HTTPClient *http.Client

	mu      sync.Mutex
	ts      oauth2.TokenSource
	granted []string
}

var _ auth.OAuthHandler = (*ClientCredentials)(nil)

// TokenSource implements auth.OAuthHandler: nil until the first
// authorization.
func (c *ClientCredentials) TokenSource(context.Context) (oauth2.TokenSource, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ts, nil
}

// Authorize implements auth.OAuthHandler.
func (c *ClientCredentials) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer drain(resp)
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	server := c.ServerURL
	if server == "" {
		server = serverURL(req)
	}
	d, err := Discover(ctx, hc, server, resp)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	scopes := union(union(c.granted, d.Scopes), c.Scopes)
	if resp.StatusCode == http.StatusForbidden && c.ts != nil && len(scopes) == len(c.granted) {
		return fmt.Errorf("the server wants scope %q, and the authorization server granted %q: nothing more to ask for", challengeParam(resp, "scope"), strings.Join(c.granted, " "))
	}
	cfg := &clientcredentials.Config{
		ClientID:       c.ClientID,
		ClientSecret:   c.ClientSecret,
		TokenURL:       d.Server.TokenEndpoint,
		Scopes:         scopes,
		EndpointParams: url.Values{"resource": {d.Resource.Resource}},
		AuthStyle:      authStyle(d.Server.TokenEndpointAuthMethodsSupported),
	}
	// The source outlives ctx (the request that was refused): later
	// tokens are asked for with a context of their own.
	tctx := context.WithValue(context.Background(), oauth2.HTTPClient, hc)
	fetch := tokenFunc(func() (*oauth2.Token, error) {
		ctx, cancel := context.WithTimeout(tctx, TokenTimeout) // a token endpoint that hangs fails the call, not holds it
		defer cancel()
		tok, err := cfg.Token(ctx)
		if err != nil {
			return nil, fmt.Errorf("client credentials at %s: %w", cfg.TokenURL, explain(err))
		}
		return tok, nil
	})
	ts := oauth2.ReuseTokenSourceWithExpiry(nil, fetch, RefreshBefore)
	tok, err := ts.Token()
	if err != nil {
		return err
	}
	c.ts = ts
	if g := grantedScopes(tok); g != nil {
		c.granted = g
	} else {
		c.granted = slices.Clone(scopes)
	}
	return nil
}

// tokenFunc is a function as an oauth2.TokenSource.
type tokenFunc func() (*oauth2.Token, error)

func (f tokenFunc) Token() (*oauth2.Token, error) { return f() }

// serverURL is the URL of the MCP endpoint req went to: its URL without
// query or fragment (the SSE transport's POSTs carry a session query).
func serverURL(req *http.Request) string {
	u := *req.URL
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}
