package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// issuer holds one trusted issuer's keys: its JWKS, fetched on first use
// and again for an unknown kid, at most once per RefreshInterval. One
// fetch runs at a time; callers whose key is cached never wait for it.
type issuer struct {
	url string
	v   *Verifier

	mu       sync.Mutex
	jwksURI  string              // from the metadata; "" until discovered
	keys     *jose.JSONWebKeySet // nil until fetched once
	fetched  time.Time           // when the last fetch began (success or not)
	fetchErr error               // the last fetch's failure; nil after a success
	fetching chan struct{}       // closed when the running fetch ends; nil when none runs
}

// key returns the issuer's key kid, fetching the JWKS when it is unknown
// and the bound allows. A known key is served from the cache; when the
// keys are older than MaxKeyAge, the first such lookup starts a refresh
// in the background, so that a key the issuer withdrew stops verifying
// within MaxKeyAge (and one request). An unknown kid within
// RefreshInterval of the last fetch gets a *PendingError: the keys will
// be fetched again then.
func (is *issuer) key(ctx context.Context, kid string) (*jose.JSONWebKey, error) {
	is.mu.Lock()
	now := is.v.opts.Now()
	if k := is.lookup(kid); k != nil {
		if is.fetching == nil && now.Sub(is.fetched) >= is.v.opts.MaxKeyAge {
			is.startFetch(now)
		}
		is.mu.Unlock()
		return k, nil
	}
	wait := is.fetching // another caller's fetch: its result is ours
	if wait == nil {
		if next := is.fetched.Add(is.v.opts.RefreshInterval); !is.fetched.IsZero() && now.Before(next) {
			// Fetched lately: the kid is unknown, or the issuer still down.
			pending := is.fetchErr == nil && is.keys != nil && kid != "" && is.keyCount() > 0
			is.mu.Unlock()
			if pending {
				return nil, &PendingError{RetryAfter: next.Sub(now)}
			}
			return is.result(kid)
		}
		wait = is.startFetch(now)
	}
	is.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: waiting for its keys: %v", ErrIssuerUnavailable, ctx.Err())
	}
	return is.result(kid)
}

// startFetch fetches the JWKS in the background and returns a channel
// closed when it is done. The fetch is the issuer's, not a caller's: it
// outlives their contexts. is.mu is held.
func (is *issuer) startFetch(now time.Time) chan struct{} {
	done := make(chan struct{})
	is.fetching, is.fetched = done, now
	go func() {
		keys, uri, err := is.fetch()
		is.mu.Lock()
		if uri != "" {
			is.jwksURI = uri
		}
		if err == nil {
			is.keys = keys
		}
		is.fetchErr, is.fetching = err, nil
		close(done)
		is.mu.Unlock()
		if err != nil {
			is.v.opts.Logger.Warn("cannot fetch the authorization server's keys", "issuer", is.url, "error", err)
		}
	}()
	return done
}

// keyCount is the number of keys fetched; is.mu is held.
func (is *issuer) keyCount() int { return len(is.keys.Keys) }

// PendingError is Verify's error for a token signed with a key the
// issuer did not publish when its keys were last fetched, too recently to
// fetch them again (RefreshInterval): a key rotated in since, or a made-up
// kid. It matches ErrKeyPending. The HTTP layer answers 503 with
// Retry-After, not 401: the token may be good, and is judged once the
// keys are fetched again.
type PendingError struct {
	// RetryAfter is when the keys may be fetched again.
	RetryAfter time.Duration
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("%v: the signing key (kid) is not among the issuer's keys as last fetched; they are fetched again in %v",
		ErrKeyPending, e.RetryAfter.Round(time.Second))
}

func (e *PendingError) Is(target error) bool { return target == ErrKeyPending }

// result is a lookup of kid after a fetch: the key; or the issuer
// unreachable; or an unknown kid.
func (is *issuer) result(kid string) (*jose.JSONWebKey, error) {
	is.mu.Lock()
	k, fetchErr := is.lookup(kid), is.fetchErr
	is.mu.Unlock()
	switch {
	case k != nil:
		return k, nil
	case fetchErr != nil:
		return nil, fmt.Errorf("%w: the keys of %s cannot be fetched: %v", ErrIssuerUnavailable, is.url, fetchErr)
	case kid == "":
		return nil, fmt.Errorf("%w: the token names no key (kid) and the issuer has several", ErrInvalidToken)
	}
	return nil, fmt.Errorf("%w: the signing key (kid) is not one of the issuer's", ErrInvalidToken)
}

// lookup finds kid among the cached keys (the only signing key, for a
// token without kid); nil when none. is.mu is held.
func (is *issuer) lookup(kid string) *jose.JSONWebKey {
	if is.keys == nil {
		return nil
	}
	var only *jose.JSONWebKey
	n := 0
	for i := range is.keys.Keys {
		k := &is.keys.Keys[i]
		if k.Use != "" && k.Use != "sig" || !k.IsPublic() {
			continue
		}
		if kid != "" && k.KeyID == kid {
			return k
		}
		only = k
		n++
	}
	if kid == "" && n == 1 {
		return only
	}
	return nil
}

// fetch discovers the JWKS URI (once) and fetches the key set, within
// FetchTimeout.
func (is *issuer) fetch() (*jose.JSONWebKeySet, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), is.v.opts.FetchTimeout)
	defer cancel()
	is.mu.Lock()
	uri := is.jwksURI
	is.mu.Unlock()
	if uri == "" {
		var err error
		if uri, err = is.discover(ctx); err != nil {
			return nil, "", err
		}
	}
	var set jose.JSONWebKeySet
	if err := is.v.getJSON(ctx, uri, &set); err != nil {
		return nil, uri, fmt.Errorf("JWKS: %w", err)
	}
	return &set, uri, nil
}

// discover reads the issuer's metadata: RFC 8414's well-known path first,
// then OpenID Connect's; it returns jwks_uri.
func (is *issuer) discover(ctx context.Context) (string, error) {
	u, _ := url.Parse(is.url) // checked by New
	path := strings.TrimSuffix(u.Path, "/")
	candidates := []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path,
		u.Scheme + "://" + u.Host + path + "/.well-known/openid-configuration",
	}
	var errs []error
	for _, c := range candidates {
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		err := is.v.getJSON(ctx, c, &meta)
		switch {
		case err != nil:
			errs = append(errs, err)
			continue
		case meta.Issuer != is.url:
			// RFC 8414 §3.3: metadata naming another issuer must not be used.
			errs = append(errs, fmt.Errorf("%s names the issuer %q", c, meta.Issuer))
			continue
		case checkURL("jwks_uri", meta.JWKSURI) != nil:
			errs = append(errs, fmt.Errorf("%s: jwks_uri %q is not an https URL", c, meta.JWKSURI))
			continue
		}
		return meta.JWKSURI, nil
	}
	return "", fmt.Errorf("discovery: %w", errors.Join(errs...))
}

// getJSON GETs a JSON document of at most MaxDocumentSize bytes.
func (v *Verifier) getJSON(ctx context.Context, u string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	return v.doJSON(req, dst)
}

// doJSON sends req and reads its answer, a JSON document of at most
// MaxDocumentSize bytes, into dst.
func (v *Verifier) doJSON(req *http.Request, dst any) error {
	u := req.Method + " " + req.URL.Redacted()
	req.Header.Set("Accept", "application/json")
	resp, err := v.opts.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, v.opts.MaxDocumentSize+1))
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	if int64(len(b)) > v.opts.MaxDocumentSize {
		return fmt.Errorf("%s: larger than %d bytes", u, v.opts.MaxDocumentSize)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	return nil
}

// Prefetch fetches every issuer's keys now, so that the first request
// does not wait and a misconfigured issuer shows at start; the error joins
// the issuers' failures. Verify retries them later either way.
func (v *Verifier) Prefetch(ctx context.Context) error {
	var errs []error
	for _, iss := range v.opts.Issuers {
		// An unknown kid forces the fetch (a zero kid would pick a sole key).
		if _, err := v.issuers[iss].key(ctx, "\x00prefetch"); errors.Is(err, ErrIssuerUnavailable) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
