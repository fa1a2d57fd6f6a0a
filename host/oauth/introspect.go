package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
)

// Introspection configures the check of opaque access tokens (any token
// that is not a JWT) at the authorization server's introspection endpoint
// (RFC 7662). Its answers are cached, keyed by the token's SHA-256 (the
// token itself is never kept): a token is asked about at most once per
// CacheTTL, so a revoked token may serve that long after its revocation.
type Introspection struct {
	// Endpoint is the introspection endpoint's URL (https; http only on
	// loopback).
	Endpoint string
	// ClientID and ClientSecret authenticate this resource server to the
	// endpoint (HTTP Basic, RFC 6749's client_secret_basic).
	ClientID, ClientSecret string
	// CacheTTL bounds how long an answer is reused; 0 means 60 s. An
	// active token's answer never outlives its exp.
	CacheTTL time.Duration
	// MaxCache bounds the answers kept; 0 means 10000. When full, expired
	// answers go first, then any.
	MaxCache int
	// MaxConcurrent bounds the introspection requests in flight; 0 means
	// 16. A token beyond them waits for a slot as long as its request
	// lasts: a flood of made-up tokens holds at most this many requests
	// at the authorization server, and tokens already cached never wait.
	MaxConcurrent int
}

// introspector asks the endpoint and caches its answers.
type introspector struct {
	cfg   Introspection
	slots chan struct{}
	cache *tokenCache[*introspected]
}

// introspected is the endpoint's answer (RFC 7662 §2.2).
type introspected struct {
	Active    bool             `json:"active"`
	Scope     string           `json:"scope"`
	ClientID  string           `json:"client_id"`
	Subject   string           `json:"sub"`
	Issuer    string           `json:"iss"`
	Audience  jwt.Audience     `json:"aud"`
	Expiry    *jwt.NumericDate `json:"exp"`
	NotBefore *jwt.NumericDate `json:"nbf"`
	ID        string           `json:"jti"`

	claims map[string]any // the whole answer, for Caller.Claims
}

// UnmarshalJSON reads the members above and keeps the whole answer.
func (a *introspected) UnmarshalJSON(b []byte) error {
	type members introspected
	if err := json.Unmarshal(b, (*members)(a)); err != nil {
		return err
	}
	return json.Unmarshal(b, &a.claims)
}

func newIntrospector(c Introspection) (*introspector, error) {
	if err := checkURL("introspection endpoint", c.Endpoint); err != nil {
		return nil, err
	}
	if c.ClientID == "" {
		return nil, fmt.Errorf("oauth: introspection needs the client id (and secret) this server authenticates with")
	}
	if c.CacheTTL <= 0 {
		c.CacheTTL = 60 * time.Second
	}
	if c.MaxCache <= 0 {
		c.MaxCache = 10000
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 16
	}
	return &introspector{cfg: c, slots: make(chan struct{}, c.MaxConcurrent), cache: newTokenCache[*introspected](c.MaxCache)}, nil
}

// looksLikeJWT: a compact JWS has three parts.
func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// introspect checks an opaque token: the cached answer, else the
// endpoint's.
func (v *Verifier) introspect(ctx context.Context, token string) (*Caller, error) {
	in := v.intro
	key := sha256.Sum256([]byte(token))
	now := v.opts.Now()
	answer, ok := in.cache.get(key, now)
	if !ok {
		select {
		case in.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: waiting to introspect the token: %v", ErrIssuerUnavailable, ctx.Err())
		}
		var err error
		answer, err = v.askEndpoint(ctx, token)
		<-in.slots
		if err != nil {
			v.opts.Logger.Warn("cannot introspect an access token", "endpoint", in.cfg.Endpoint, "error", err)
			return nil, fmt.Errorf("%w: introspection: %v", ErrIssuerUnavailable, err)
		}
		expires := now.Add(in.cfg.CacheTTL)
		if answer.Expiry != nil && answer.Expiry.Time().Before(expires) {
			expires = answer.Expiry.Time()
		}
		in.cache.put(key, answer, expires, now)
	}
	return v.checkIntrospected(answer, now)
}

// askEndpoint POSTs the token to the introspection endpoint.
func (v *Verifier) askEndpoint(ctx context.Context, token string) (*introspected, error) {
	in := v.intro
	ctx, cancel := context.WithTimeout(ctx, v.opts.FetchTimeout)
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.cfg.Endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(in.cfg.ClientID), url.QueryEscape(in.cfg.ClientSecret))
	var answer introspected
	if err := v.doJSON(req, &answer); err != nil {
		return nil, err
	}
	return &answer, nil
}

// checkIntrospected applies the JWT path's rules to an introspection
// answer: active, issuer, audience, exp and nbf with leeway, scopes.
func (v *Verifier) checkIntrospected(a *introspected, now time.Time) (*Caller, error) {
	leeway := v.opts.Leeway
	switch {
	case !a.Active:
		return nil, fmt.Errorf("%w: the token is not active (unknown, expired or revoked)", ErrInvalidToken)
	case a.Issuer != "" && v.issuers[a.Issuer] == nil:
		return nil, fmt.Errorf("%w: the issuer is not trusted", ErrInvalidToken)
	case !slices.Contains(a.Audience, v.opts.Resource):
		return nil, fmt.Errorf("%w: the token is for another resource (audience)", ErrInvalidToken)
	case a.Expiry != nil && now.Add(-leeway).After(a.Expiry.Time()):
		return nil, fmt.Errorf("%w: the token has expired", ErrInvalidToken)
	case a.NotBefore != nil && now.Add(leeway).Before(a.NotBefore.Time()):
		return nil, fmt.Errorf("%w: the token is not valid yet", ErrInvalidToken)
	}
	c := &Caller{Issuer: a.Issuer, Subject: a.Subject, ClientID: a.ClientID, Scopes: strings.Fields(a.Scope), TokenID: a.ID, Claims: a.claims}
	if a.Expiry != nil {
		c.Expiry = a.Expiry.Time()
	}
	return v.finish(c)
}
