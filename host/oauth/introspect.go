package oauth

import (
	"cmp"
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
//
// Made-up tokens cannot starve real ones. Anyone may send any token, and
// each unknown one costs a request at the endpoint: an endpoint that
// hangs on them, fed 48 of them, once made a valid token wait 29 s for
// one of 16 slots (issue 31, attack 20). So a token the endpoint once
// said was active is "known good" until its exp: when its cached answer
// expires it is asked about again through KnownConcurrent slots of its
// own, never behind the others. Every other token waits at most SlotWait
// for one of MaxConcurrent slots (then the server is unavailable to it:
// 503, retry), a request lasts at most Timeout, and a token whose
// request failed is not asked about again for FailureTTL (an inactive
// answer is cached as any other, for CacheTTL).
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
	// MaxConcurrent bounds the introspection requests in flight for
	// tokens not known good; 0 means 16. A flood of made-up tokens holds
	// at most this many requests at the authorization server, and tokens
	// already cached never wait.
	MaxConcurrent int
	// KnownConcurrent bounds the introspection requests in flight for
	// tokens known good (answered active before, not yet past their exp),
	// apart from MaxConcurrent; 0 means 4.
	KnownConcurrent int
	// SlotWait bounds how long a token not known good waits for one of
	// MaxConcurrent slots; 0 means 2 s. Past it the token is refused as
	// ErrIssuerUnavailable (503 with Retry-After), not left waiting.
	SlotWait time.Duration
	// Timeout bounds one introspection request; 0 means 5 s.
	Timeout time.Duration
	// FailureTTL is how long a token whose introspection request failed
	// (the endpoint down, hanging, answering garbage) is refused as
	// ErrIssuerUnavailable without asking again; 0 means 5 s.
	FailureTTL time.Duration
}

// The defaults of Introspection's bounds.
const (
	DefaultIntrospectionConcurrent      = 16
	DefaultIntrospectionKnownConcurrent = 4
	DefaultIntrospectionSlotWait        = 2 * time.Second
	DefaultIntrospectionTimeout         = 5 * time.Second
	DefaultIntrospectionFailureTTL      = 5 * time.Second
)

// introspector asks the endpoint and caches its answers.
type introspector struct {
	cfg        Introspection
	slots      chan struct{}              // for tokens not known good (MaxConcurrent)
	knownSlots chan struct{}              // for tokens known good (KnownConcurrent)
	cache      *tokenCache[*introspected] // the answers, for CacheTTL
	known      *tokenCache[struct{}]      // tokens answered active, until their exp
	failed     *tokenCache[error]         // tokens whose request failed, for FailureTTL
}

// knownTTL bounds how long a token answered active without an exp stays
// known good.
const knownTTL = 24 * time.Hour

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
	c.MaxConcurrent = cmp.Or(max(c.MaxConcurrent, 0), DefaultIntrospectionConcurrent)
	c.KnownConcurrent = cmp.Or(max(c.KnownConcurrent, 0), DefaultIntrospectionKnownConcurrent)
	c.SlotWait = cmp.Or(max(c.SlotWait, 0), DefaultIntrospectionSlotWait)
	c.Timeout = cmp.Or(max(c.Timeout, 0), DefaultIntrospectionTimeout)
	c.FailureTTL = cmp.Or(max(c.FailureTTL, 0), DefaultIntrospectionFailureTTL)
	return &introspector{cfg: c, slots: make(chan struct{}, c.MaxConcurrent), knownSlots: make(chan struct{}, c.KnownConcurrent),
		cache: newTokenCache[*introspected](c.MaxCache), known: newTokenCache[struct{}](c.MaxCache),
		failed: newTokenCache[error](c.MaxCache)}, nil
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
		if err, failed := in.failed.get(key, now); failed {
			return nil, err
		}
		release, err := in.slot(ctx, key, now)
		if err != nil {
			return nil, err
		}
		answer, err = v.askEndpoint(ctx, token)
		release()
		if err != nil {
			v.opts.Logger.Warn("cannot introspect an access token", "endpoint", in.cfg.Endpoint, "error", err)
			err = fmt.Errorf("%w: introspection: %v", ErrIssuerUnavailable, err)
			if ctx.Err() == nil { // the endpoint failed, not the caller who left
				in.failed.put(key, err, now.Add(in.cfg.FailureTTL), now)
			}
			return nil, err
		}
		expires := now.Add(in.cfg.CacheTTL)
		if answer.Expiry != nil && answer.Expiry.Time().Before(expires) {
			expires = answer.Expiry.Time()
		}
		in.cache.put(key, answer, expires, now)
		if answer.Active {
			good := now.Add(knownTTL)
			if answer.Expiry != nil {
				good = answer.Expiry.Time()
			}
			in.known.put(key, struct{}{}, good, now)
		}
	}
	return v.checkIntrospected(answer, now)
}

// slot takes a slot to ask about the token of key: one of its own when it
// is known good (waiting as long as ctx lets it), else one of the others
// within SlotWait. release gives it back.
func (in *introspector) slot(ctx context.Context, key [sha256.Size]byte, now time.Time) (release func(), _ error) {
	if _, good := in.known.get(key, now); good {
		select {
		case in.knownSlots <- struct{}{}:
			return func() { <-in.knownSlots }, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: waiting to introspect the token: %v", ErrIssuerUnavailable, ctx.Err())
		}
	}
	wait := time.NewTimer(in.cfg.SlotWait)
	defer wait.Stop()
	select {
	case in.slots <- struct{}{}:
		return func() { <-in.slots }, nil
	case <-wait.C:
		return nil, fmt.Errorf("%w: all %d introspection requests for new tokens are in flight, none ended within %v",
			ErrIssuerUnavailable, in.cfg.MaxConcurrent, in.cfg.SlotWait)
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: waiting to introspect the token: %v", ErrIssuerUnavailable, ctx.Err())
	}
}

// askEndpoint POSTs the token to the introspection endpoint.
func (v *Verifier) askEndpoint(ctx context.Context, token string) (*introspected, error) {
	in := v.intro
	ctx, cancel := context.WithTimeout(ctx, in.cfg.Timeout)
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
