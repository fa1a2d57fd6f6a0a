// Package oauth makes plughost's HTTP endpoint an OAuth 2.1 resource
// server: a [Verifier] checks the bearer access tokens (JWTs) clients send,
// and describes the endpoint in Protected Resource Metadata (RFC 9728) so
// that a client refused with 401 learns which authorization server to ask.
//
// Build one from the issuers it trusts, its own resource URL and the
// scopes a caller needs:
//
//	v, err := oauth.New(&oauth.Options{
//		Issuers:  []string{"https://auth.example.com"},
//		Resource: "https://mcp.example.com/mcp",
//		Scopes:   []string{"mcp:tools"},
//	})
//	caller, err := v.Verify(ctx, token) // token: the Authorization header's, "Bearer " cut
//
// Verify accepts a token only when all of these hold:
//   - it is at most MaxTokenSize bytes, a compact JWS signed with RS256,
//     ES256 or EdDSA ("none" and the HMAC algorithms are refused: a public
//     key must never serve as a shared secret);
//   - its "iss" is one of Issuers, and its signature verifies with the key
//     its "kid" names in that issuer's JWKS. The JWKS is found through the
//     issuer's metadata (RFC 8414's /.well-known/oauth-authorization-server,
//     else OpenID Connect's /.well-known/openid-configuration, "jwks_uri"),
//     fetched on first use and cached; an unknown kid refetches it (a key
//     rotation), at most once per RefreshInterval per issuer (a kid still
//     unknown within it is ErrKeyPending, answered 503 with Retry-After:
//     the token may be good), and in the background once the keys are
//     older than MaxKeyAge (a withdrawn key stops verifying), so a flood of
//     made-up kids costs the issuer one request per interval, and callers
//     whose key is known never wait for a fetch;
//   - its "aud" names Resource (RFC 8707: a token minted for another
//     resource is refused), and "exp", "nbf" and "iat" hold with Leeway;
//   - its scopes ("scope", space-separated, or "scp", a list) include every
//     one of Scopes; else the error is [ErrInsufficientScope], which the
//     HTTP layer answers with 403 so that the client can step up.
//
// An opaque token (anything but a JWT) is refused, unless
// Options.Introspection names the authorization server's introspection
// endpoint (RFC 7662): its answer (active, iss, aud, exp, nbf, scope) is
// held to the same rules, and cached (see [Introspection]).
//
// Errors wrap [ErrInvalidToken], [ErrInsufficientScope] or
// [ErrIssuerUnavailable] with a description fit for a WWW-Authenticate
// header: none contains the token.
//
// The JOSE work (parsing, signature checks, JWK decoding) is
// github.com/go-jose/go-jose/v4's; this package only fetches, caches and
// chooses. go-jose was chosen over github.com/lestrrat-go/jwx/v3 for its
// footprint: it was already in the module graph (through grpc) and
// requiring it directly took `go mod graph | wc -l` from 306 to 308 lines,
// where jwx/v3 took it to 338 (httprc, blackmagic, option, …). jwx's JWKS
// cache would have saved the ~200 lines of jwks.go, whose bounds
// (document size, refresh rate, timeouts) this package sets itself anyway.
package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/go-hclog"
)

// Defaults of [Options].
const (
	DefaultLeeway          = 60 * time.Second
	DefaultMaxTokenSize    = 16 << 10
	DefaultMaxDocumentSize = 1 << 20
	DefaultRefreshInterval = 10 * time.Second
	DefaultMaxKeyAge       = time.Hour
	DefaultVerifiedTTL     = 5 * time.Minute
	DefaultMaxVerified     = 10000
	DefaultFetchTimeout    = 10 * time.Second
)

// Errors of [Verifier.Verify], wrapped with a description.
var (
	// ErrNoToken: the request carried no bearer token.
	ErrNoToken = errors.New("no bearer token")
	// ErrInvalidToken: the token is malformed, too large, wrongly signed,
	// expired or not yet valid, from an issuer not trusted, or for
	// another resource (RFC 6750's invalid_token: 401).
	ErrInvalidToken = errors.New("invalid token")
	// ErrInsufficientScope: the token is valid but lacks a scope Options
	// require (RFC 6750's insufficient_scope: 403).
	ErrInsufficientScope = errors.New("insufficient scope")
	// ErrIssuerUnavailable: the issuer's keys could not be fetched, so
	// the token could be neither accepted nor refused (503).
	ErrIssuerUnavailable = errors.New("authorization server unavailable")
	// ErrKeyPending: the token names a key the issuer's keys lacked when
	// last fetched, too recently to fetch them again (*PendingError says
	// when; 503 with Retry-After).
	ErrKeyPending = errors.New("signing key not known yet")
)

// Options configure a [Verifier]. Zero fields mean the defaults.
type Options struct {
	// Issuers are the authorization servers whose tokens are accepted,
	// by their issuer identifier (an https URL; http only for loopback,
	// in tests). At least one.
	Issuers []string
	// Resource is this server's own resource URL, such as
	// "https://mcp.example.com/mcp": a token's "aud" must name it.
	Resource string
	// Scopes must all be granted to a token; none means any valid token.
	Scopes []string
	// Leeway is the clock skew allowed on exp, nbf and iat; 0 means
	// DefaultLeeway (60 s), negative none.
	Leeway time.Duration
	// MaxTokenSize bounds a token, in bytes; 0 means 16 KiB.
	MaxTokenSize int
	// MaxDocumentSize bounds a fetched metadata or JWKS document; 0
	// means 1 MiB.
	MaxDocumentSize int64
	// RefreshInterval is the least time between two fetches of one
	// issuer's JWKS (an unknown kid, or an unreachable issuer, asks for
	// one); 0 means 10 s.
	RefreshInterval time.Duration
	// VerifiedTTL is how long a JWT that verified is taken at its word
	// again without checking its signature (never past its exp); 0 means
	// 5 minutes. A key the issuer withdraws stops verifying tokens within
	// MaxKeyAge, those seen already within VerifiedTTL more.
	VerifiedTTL time.Duration
	// MaxVerified bounds the verified tokens kept (by their SHA-256, never
	// the tokens); 0 means 10000.
	MaxVerified int
	// MaxKeyAge is how long fetched keys are used before they are fetched
	// again (in the background: the cached keys serve meanwhile), so that
	// a key the issuer withdrew stops verifying; 0 means 1 hour.
	MaxKeyAge time.Duration
	// FetchTimeout bounds one discovery and JWKS fetch; 0 means 10 s.
	FetchTimeout time.Duration
	// HTTPClient fetches metadata and keys; nil means a client of its own
	// (redirects not followed).
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger learns of failed fetches (WARN); nil discards.
	Logger hclog.Logger
	// Introspection, when not nil, checks opaque tokens (any that is not
	// a JWT) at the authorization server (RFC 7662); nil refuses them.
	Introspection *Introspection
}

// Caller is who a verified token speaks for.
type Caller struct {
	// Issuer is the token's "iss"; Subject its "sub", else its ClientID:
	// a token without sub (RFC 7662 makes it optional in an introspection
	// answer, and oidc-provider leaves it out for client credentials)
	// speaks for its client, as RFC 9068 §2.2 has a JWT of that grant say
	// in sub. So two clients' tokens never pass for one caller.
	Issuer, Subject string
	// ClientID is the OAuth client the token was issued to: "client_id"
	// (RFC 9068), else "azp".
	ClientID string
	// Scopes are the scopes granted.
	Scopes []string
	// TokenID is "jti", when present: what may be logged of a token.
	TokenID string
	// Expiry is "exp".
	Expiry time.Time
	// Claims are all the token's claims (or the introspection answer's
	// members), for access rules.
	Claims map[string]any
}

// Verifier checks access tokens. It is safe for concurrent use.
type Verifier struct {
	opts    Options
	issuers map[string]*issuer
	meta    []byte        // the Protected Resource Metadata document
	intro   *introspector // nil without Options.Introspection
	// verified keeps the callers of JWTs that verified (VerifiedTTL).
	verified *tokenCache[*Caller]
}

// New returns a Verifier for opts. It fetches nothing: the issuers' keys
// are fetched on first use (see [Verifier.Prefetch]).
func New(opts *Options) (*Verifier, error) {
	if opts == nil {
		return nil, errors.New("oauth: no options")
	}
	v := &Verifier{opts: *opts, issuers: map[string]*issuer{}}
	o := &v.opts
	if len(o.Issuers) == 0 {
		return nil, errors.New("oauth: no issuer: name the authorization server whose tokens to accept")
	}
	if err := checkURL("resource", o.Resource); err != nil {
		return nil, err
	}
	if strings.Contains(o.Resource, "#") {
		return nil, fmt.Errorf("oauth: resource %q: a resource URL has no fragment (RFC 8707)", o.Resource)
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \"\\") {
			return nil, fmt.Errorf("oauth: scope %q: a scope is a non-empty word without spaces or quotes", s)
		}
	}
	switch {
	case o.Leeway == 0:
		o.Leeway = DefaultLeeway
	case o.Leeway < 0:
		o.Leeway = 0
	}
	if o.MaxTokenSize <= 0 {
		o.MaxTokenSize = DefaultMaxTokenSize
	}
	if o.MaxDocumentSize <= 0 {
		o.MaxDocumentSize = DefaultMaxDocumentSize
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.MaxKeyAge <= 0 {
		o.MaxKeyAge = DefaultMaxKeyAge
	}
	if o.VerifiedTTL <= 0 {
		o.VerifiedTTL = DefaultVerifiedTTL
	}
	if o.MaxVerified <= 0 {
		o.MaxVerified = DefaultMaxVerified
	}
	v.verified = newTokenCache[*Caller](o.MaxVerified)
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	for _, iss := range o.Issuers {
		if err := checkURL("issuer", iss); err != nil {
			return nil, err
		}
		v.issuers[iss] = &issuer{url: iss, v: v}
	}
	if o.Introspection != nil {
		var err error
		if v.intro, err = newIntrospector(*o.Introspection); err != nil {
			return nil, err
		}
	}
	v.meta = v.metadata()
	return v, nil
}

// checkURL refuses what cannot be an issuer or resource URL: not https,
// or http beyond loopback.
func checkURL(what, s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.RawQuery != "" {
		return fmt.Errorf("oauth: %s %q: want an absolute https URL without a query", what, s)
	}
	if u.Scheme == "https" || u.Scheme == "http" && isLoopbackHost(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("oauth: %s %q: want https (http only on loopback)", what, s)
}

// Resource is the resource URL the Verifier was built for.
func (v *Verifier) Resource() string { return v.opts.Resource }

// Scopes are the scopes a token needs.
func (v *Verifier) Scopes() []string { return slices.Clone(v.opts.Scopes) }

// algorithms are the signature algorithms accepted.
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA}

// claims are the claims read from a token.
type claims struct {
	jwt.Claims
	Scope    string    `json:"scope"`
	Scp      scopeList `json:"scp"`
	ClientID string    `json:"client_id"`
	AZP      string    `json:"azp"`
}

// Verify checks token (without its "Bearer " prefix) and returns its
// caller; see the package doc. ctx bounds only the wait for a JWKS fetch.
func (v *Verifier) Verify(ctx context.Context, token string) (*Caller, error) {
	if token == "" {
		return nil, ErrNoToken
	}
	if len(token) > v.opts.MaxTokenSize {
		return nil, fmt.Errorf("%w: the token is larger than %d bytes", ErrInvalidToken, v.opts.MaxTokenSize)
	}
	if v.intro != nil && !looksLikeJWT(token) {
		return v.introspect(ctx, token)
	}
	seen := sha256.Sum256([]byte(token))
	if c, ok := v.verified.get(seen, v.opts.Now()); ok { // verified lately: its signature, iss, aud and nbf hold
		cc := *c
		return v.finish(&cc)
	}
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidToken, parseProblem(err))
	}
	var unverified claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, fmt.Errorf("%w: the claims are not a JSON object", ErrInvalidToken)
	}
	is := v.issuers[unverified.Issuer]
	if is == nil {
		return nil, fmt.Errorf("%w: the issuer is not trusted", ErrInvalidToken)
	}
	key, err := is.key(ctx, tok.Headers[0].KeyID)
	if err != nil {
		return nil, err
	}
	var c claims
	var all map[string]any
	if err := tok.Claims(key, &c, &all); err != nil {
		return nil, fmt.Errorf("%w: the signature does not verify", ErrInvalidToken)
	}
	err = c.ValidateWithLeeway(jwt.Expected{Issuer: is.url, AnyAudience: jwt.Audience{v.opts.Resource}, Time: v.opts.Now()},
		v.opts.Leeway)
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return nil, fmt.Errorf("%w: the token has expired", ErrInvalidToken)
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, fmt.Errorf("%w: the token is not valid yet", ErrInvalidToken)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, fmt.Errorf("%w: the token is for another resource (audience)", ErrInvalidToken)
	default:
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if c.Expiry == nil {
		return nil, fmt.Errorf("%w: the token has no expiry", ErrInvalidToken)
	}
	caller := &Caller{Issuer: c.Issuer, Subject: c.Subject, ClientID: c.ClientID, Scopes: c.Scp, TokenID: c.ID,
		Expiry: c.Expiry.Time(), Claims: all}
	if caller.ClientID == "" {
		caller.ClientID = c.AZP
	}
	if c.Scope != "" {
		caller.Scopes = strings.Fields(c.Scope)
	}
	now := v.opts.Now()
	until := now.Add(v.opts.VerifiedTTL)
	if caller.Expiry.Before(until) {
		until = caller.Expiry
	}
	v.verified.put(seen, caller, until, now)
	cc := *caller
	return v.finish(&cc)
}

// finish completes c and returns it: a token without sub speaks for its
// client (see [Caller]). The error is ErrInsufficientScope when c lacks a
// scope the Options require.
func (v *Verifier) finish(c *Caller) (*Caller, error) {
	if c.Subject == "" {
		c.Subject = c.ClientID
	}
	for _, s := range v.opts.Scopes {
		if !slices.Contains(c.Scopes, s) {
			return c, fmt.Errorf("%w: the token lacks the scope %s", ErrInsufficientScope, s)
		}
	}
	return c, nil
}

// scopeList is an "scp" claim: a list, or a space-separated string as
// some servers write it.
type scopeList []string

func (l *scopeList) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*l = strings.Fields(s)
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

// parseProblem words why a token did not parse, without quoting it.
func parseProblem(err error) string {
	if strings.Contains(err.Error(), "unexpected signature algorithm") {
		return "the signature algorithm is not one of RS256, ES256, EdDSA"
	}
	return "not a signed JWT"
}

// isLoopbackHost reports whether host names this machine.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
