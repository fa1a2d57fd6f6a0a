package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// LoginOptions say whom to log in to, as whom, and how to reach the user.
type LoginOptions struct {
	// Name is the declared server's (for the messages), ServerURL its
	// endpoint.
	Name, ServerURL string
	// ClientID and ClientSecret are a pre-registered client ("" for none:
	// a client is registered with the authorization server, when it
	// offers Dynamic Client Registration).
	ClientID, ClientSecret string
	// ClientMetadataURL is a Client ID Metadata Document's URL, used as
	// the client id where the authorization server supports them.
	ClientMetadataURL string
	// Scopes are asked for on top of the server's, and of those a
	// previous record holds or was found to want (Previous).
	Scopes   []string
	Previous *Record
	// RedirectPort is the loopback port of the redirect; 0 picks one.
	RedirectPort int
	// Browse shows the user the authorization URL (prints it, opens a
	// browser); it must not block until the user is done.
	Browse func(authURL string)
	// HTTPClient reaches the server, the metadata and the endpoints; nil
	// means http.DefaultClient.
	HTTPClient *http.Client
	// Connect is called with an http.Client that authorizes itself
	// (through the login, on the server's first 401); it should use the
	// server with it (connect, list), which starts the login and proves
	// the token works. Login returns Connect's error.
	Connect func(ctx context.Context, hc *http.Client) error
}

// Login runs the authorization code grant with PKCE against the server of
// o, in the user's browser, and returns the record to store. The go-sdk's
// auth.AuthorizationCodeHandler does the work once the server refuses
// Connect's first request: discovery, the choice of client (a Client ID
// Metadata Document where supported, else the pre-registered client, else
// Dynamic Client Registration), the authorization URL (PKCE S256, state,
// resource), the check of the answer's state and iss (RFC 9207), and the
// code's exchange (with the resource). Login adds the loopback redirect: a
// listener on 127.0.0.1 that takes the browser's redirect (one per
// authorization: a step-up during Connect asks again), each awaited for at
// most ten minutes or until ctx ends.
func Login(ctx context.Context, o *LoginOptions) (*Record, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.RedirectPort)))
	if err != nil {
		return nil, fmt.Errorf("the loopback redirect: %v", err)
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	answers := make(chan answer, 1)
	srv := &http.Server{Handler: callback(answers), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	var rec *Record
	var recMu sync.Mutex
	// observe records the resource of the code's exchange, which a
	// refresh repeats.
	var resource string
	observing := observeResource(hc, &resource, &recMu)
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{redirect},
			ClientName:              "plughost",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			o.Browse(a.URL)
			wait := time.NewTimer(10 * time.Minute)
			defer wait.Stop()
			select {
			case a := <-answers:
				return a.res, a.err
			case <-wait.C:
				return nil, errors.New("no answer from the browser within 10 minutes")
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		ScopeFilter: func(discovered []string) []string {
			s := union(discovered, o.Scopes)
			if o.Previous != nil {
				s = union(union(s, o.Previous.Scopes), o.Previous.Wanted)
			}
			return s
		},
		RequestRefreshToken: true,
		Client:              observing,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			recMu.Lock()
			defer recMu.Unlock()
			own := *tok // the record's own: the caller may change it while the source serves
			r := &Record{Server: o.ServerURL, Resource: resource, TokenURL: c.Endpoint.TokenURL, ClientID: c.ClientID,
				AuthStyle: c.Endpoint.AuthStyle, Scopes: c.Scopes, Token: &own}
			if g := grantedScopes(tok); g != nil {
				r.Scopes = g
			}
			if c.ClientSecret != o.ClientSecret {
				r.ClientSecret = c.ClientSecret // a registered client's
			}
			rec = r
			return oauth2.StaticTokenSource(tok), nil
		},
	}
	if o.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	if o.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, err
	}
	client := *hc
	client.Transport = &Transport{Handler: h, Base: hc.Transport}
	if err := o.Connect(ctx, &client); err != nil {
		return nil, err
	}
	recMu.Lock()
	defer recMu.Unlock()
	if rec == nil {
		return nil, fmt.Errorf("%s did not ask for a login: it needs no token", o.ServerURL)
	}
	if o.Previous != nil {
		// What the server wanted is now asked for; what it still lacks, a
		// 403 will record again.
		rec.Wanted = nil
	}
	return rec, nil
}

// answer is what the browser's redirect brought: a code, or the
// authorization server's refusal.
type answer struct {
	res *auth.AuthorizationResult
	err error
}

// callback serves the redirect: each answer goes to answers unless one is
// already waiting there (a step-up asks again on the same listener); the
// browser is told to return to the terminal.
func callback(answers chan<- answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		a := answer{res: &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}}
		msg := "plughost is logged in. You may close this window."
		if a.res.Code == "" {
			why := q.Get("error")
			if why == "" {
				why = "no code"
			}
			if d := q.Get("error_description"); d != "" {
				why += " (" + clip(d, 200) + ")"
			}
			a = answer{err: errors.New("the authorization server refused the login: " + why)}
			msg = a.err.Error()
		}
		select {
		case answers <- a:
		default:
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>plughost</title><p>%s</p>\n", html.EscapeString(msg))
	})
}

// observeResource is hc noting, under mu, the resource parameter of the
// authorization code's exchange in *resource.
func observeResource(hc *http.Client, resource *string, mu *sync.Mutex) *http.Client {
	c := *hc
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPost && r.GetBody != nil && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			if body, err := r.GetBody(); err == nil {
				b, _ := io.ReadAll(io.LimitReader(body, 64<<10))
				body.Close()
				if form, err := url.ParseQuery(string(b)); err == nil && form.Get("grant_type") == "authorization_code" {
					mu.Lock()
					*resource = form.Get("resource")
					mu.Unlock()
				}
			}
		}
		return next.RoundTrip(r)
	})
	return &c
}
