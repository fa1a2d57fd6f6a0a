package oauth_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/oauth"
	"github.com/plughost/plughost/host/oauth/oauthtest"
)

const resource = "https://mcp.example.com/mcp"

// clock is a settable clock for Options.Now.
type clock struct{ off atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) advance(d time.Duration) { c.off.Add(int64(d)) }

func newVerifier(t testing.TB, as *oauthtest.Server, c *clock) *oauth.Verifier {
	t.Helper()
	o := &oauth.Options{Issuers: []string{as.URL}, Resource: resource, Scopes: []string{"mcp:tools"}}
	if c != nil {
		o.Now = c.now
	}
	v, err := oauth.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerify(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	v := newVerifier(t, as, nil)
	now := time.Now()
	unsigned := func(header string) string {
		enc := base64.RawURLEncoding.EncodeToString
		return enc([]byte(header)) + "." + enc([]byte(`{"iss":"`+as.URL+`","aud":"`+resource+`","sub":"mallory","scope":"mcp:tools","exp":9999999999}`)) + "."
	}
	hmac, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hs256, err := jwt.Signed(hmac).Claims(jwt.Claims{Issuer: as.URL, Audience: jwt.Audience{resource}}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	ok := oauthtest.Token{Audience: resource, Scope: "mcp:tools other", ID: "t-1"}
	with := func(f func(*oauthtest.Token)) string { tok := ok; f(&tok); return as.Mint(t, tok) }
	tests := map[string]struct {
		token   string
		wantErr error
		wantMsg string // in the error
		want    *oauth.Caller
	}{
		"valid": {token: as.Mint(t, ok),
			want: &oauth.Caller{Issuer: as.URL, Subject: "alice", ClientID: "test-client", Scopes: []string{"mcp:tools", "other"}, TokenID: "t-1"}},
		"expired within leeway": {token: with(func(k *oauthtest.Token) { k.Expiry = now.Add(-30 * time.Second) })},
		"empty":                 {token: "", wantErr: oauth.ErrNoToken},
		"malformed":             {token: "not.a.jwt", wantErr: oauth.ErrInvalidToken, wantMsg: "not a signed JWT"},
		"oversized":             {token: strings.Repeat("a", 16<<10+1), wantErr: oauth.ErrInvalidToken, wantMsg: "larger than 16384 bytes"},
		"expired": {token: with(func(k *oauthtest.Token) { k.Expiry = now.Add(-2 * time.Minute) }),
			wantErr: oauth.ErrInvalidToken, wantMsg: "expired"},
		"not yet valid": {token: with(func(k *oauthtest.Token) { k.NotBefore = now.Add(2 * time.Minute) }),
			wantErr: oauth.ErrInvalidToken, wantMsg: "not valid yet"},
		"wrong audience": {token: with(func(k *oauthtest.Token) { k.Audience = "https://other.example.com/mcp" }),
			wantErr: oauth.ErrInvalidToken, wantMsg: "another resource"},
		"no audience": {token: with(func(k *oauthtest.Token) { k.Audience = "" }),
			wantErr: oauth.ErrInvalidToken, wantMsg: "another resource"},
		"wrong issuer": {token: with(func(k *oauthtest.Token) { k.Issuer = "https://evil.example.com" }),
			wantErr: oauth.ErrInvalidToken, wantMsg: "issuer is not trusted"},
		"bad signature": {token: with(func(k *oauthtest.Token) { k.Foreign = true }),
			wantErr: oauth.ErrInvalidToken, wantMsg: "signature does not verify"},
		"alg none": {token: unsigned(`{"alg":"none"}`), wantErr: oauth.ErrInvalidToken, wantMsg: "not one of RS256, ES256, EdDSA"},
		"HS256":    {token: hs256, wantErr: oauth.ErrInvalidToken, wantMsg: "not one of RS256, ES256, EdDSA"},
		"missing scope": {token: with(func(k *oauthtest.Token) { k.Scope = "other" }),
			wantErr: oauth.ErrInsufficientScope, wantMsg: "lacks the scope mcp:tools"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := v.Verify(context.Background(), tc.token)
			if !errors.Is(err, tc.wantErr) || tc.wantErr == nil && err != nil {
				t.Fatalf("Verify: %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), tc.wantMsg) {
					t.Errorf("error %q does not say %q", err, tc.wantMsg)
				}
				if tc.token != "" && strings.Contains(err.Error(), tc.token) {
					t.Errorf("the error quotes the token: %q", err)
				}
				return
			}
			if tc.want != nil {
				got.Expiry = time.Time{}
				if got.Claims["sub"] != got.Subject || got.Claims["jti"] != got.TokenID {
					t.Errorf("claims %v lack sub and jti", got.Claims)
				}
				got.Claims = nil
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("caller (-want +got):\n%s", d)
				}
			}
		})
	}
}

// Discovery falls back to OpenID Connect's well-known path; Prefetch
// fetches the keys before the first token.
func TestPrefetchOpenIDDiscovery(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	as.OpenIDOnly()
	v := newVerifier(t, as, nil)
	if err := v.Prefetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := as.JWKSFetches(); n != 1 {
		t.Fatalf("JWKS fetched %d times by Prefetch, want 1", n)
	}
	if _, err := v.Verify(context.Background(), as.Mint(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools"})); err != nil {
		t.Fatal(err)
	}
	if n := as.JWKSFetches(); n != 1 {
		t.Errorf("JWKS fetched %d times, want 1 (the prefetched keys serve)", n)
	}
}

func TestVerifyKeyRotation(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	c := new(clock)
	v := newVerifier(t, as, c)
	tok := oauthtest.Token{Audience: resource, Scope: "mcp:tools"}
	if _, err := v.Verify(context.Background(), as.Mint(t, tok)); err != nil {
		t.Fatal(err)
	}
	as.Rotate(t)
	c.advance(time.Second)
	_, err := v.Verify(context.Background(), as.Mint(t, tok))
	var pending *oauth.PendingError
	if !errors.As(err, &pending) || !errors.Is(err, oauth.ErrKeyPending) || pending.RetryAfter > 9*time.Second || pending.RetryAfter < 8*time.Second {
		t.Fatalf("a new kid 1 s after the first fetch: %v, want a PendingError to retry in 9 s", err)
	}
	c.advance(oauth.DefaultRefreshInterval)
	if _, err := v.Verify(context.Background(), as.Mint(t, tok)); err != nil {
		t.Fatalf("a token of the new key: %v", err)
	}
	if n := as.JWKSFetches(); n != 2 {
		t.Errorf("JWKS fetched %d times, want 2 (first use, then the new kid)", n)
	}
}

// Keys older than MaxKeyAge are fetched again in the background: a key
// the issuer withdrew stops verifying, while the cached keys serve the
// request that noticed.
func TestVerifyWithdrawnKey(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	c := new(clock)
	v := newVerifier(t, as, c)
	tok := as.Mint(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools"})
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	as.Rotate(t) // the old key is withdrawn: only the new one is published
	c.advance(oauth.DefaultMaxKeyAge)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("the request that notices the keys' age is served from the cache: %v", err)
	}
	// A token of the new key waits for that fetch if it still runs (or
	// finds its key fetched): once it verifies, the keys are the new ones.
	if _, err := v.Verify(context.Background(), as.Mint(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools"})); err != nil {
		t.Fatalf("a token of the new key: %v", err)
	}
	if _, err := v.Verify(context.Background(), tok); err == nil {
		t.Fatal("the withdrawn key still verifies")
	}
	if n := as.JWKSFetches(); n != 2 {
		t.Errorf("JWKS fetched %d times, want 2", n)
	}
}

// A flood of tokens naming unknown kids costs the issuer one fetch per
// RefreshInterval, and callers with a known key go on being served.
func TestVerifyUnknownKidFlood(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	c := new(clock)
	v := newVerifier(t, as, c)
	good := as.Mint(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools"})
	if _, err := v.Verify(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	c.advance(oauth.DefaultRefreshInterval) // the flood may refresh once
	var wg sync.WaitGroup
	for i := range 200 {
		bad := as.Mint(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools", KeyID: "made-up-" + string(rune('a'+i%26)) + strings.Repeat("x", i)})
		wg.Go(func() {
			// The flood's first refetches; those that wait for it learn
			// the kid is unknown, those after it that it may be soon.
			if _, err := v.Verify(context.Background(), bad); !errors.Is(err, oauth.ErrInvalidToken) && !errors.Is(err, oauth.ErrKeyPending) {
				t.Errorf("unknown kid: %v, want ErrInvalidToken or ErrKeyPending", err)
			}
		})
		wg.Go(func() {
			if _, err := v.Verify(context.Background(), good); err != nil {
				t.Errorf("a valid token during the flood: %v", err)
			}
		})
	}
	wg.Wait()
	if n := as.JWKSFetches(); n != 2 {
		t.Errorf("JWKS fetched %d times, want 2 (first use, one refresh within the interval)", n)
	}
	c.advance(oauth.DefaultRefreshInterval)
	if _, err := v.Verify(context.Background(), as.Mint(t, oauthtest.Token{Audience: resource, KeyID: "later"})); !errors.Is(err, oauth.ErrInvalidToken) {
		t.Fatalf("unknown kid after the interval: %v", err)
	}
	if n := as.JWKSFetches(); n != 3 {
		t.Errorf("JWKS fetched %d times after the interval, want 3", n)
	}
}

func TestVerifyIssuerUnavailable(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	c := new(clock)
	v := newVerifier(t, as, c)
	tok := as.Mint(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools"})
	as.SetDown(true)
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, oauth.ErrIssuerUnavailable) {
		t.Fatalf("issuer down at start: %v, want ErrIssuerUnavailable", err)
	}
	as.SetDown(false)
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, oauth.ErrIssuerUnavailable) {
		t.Fatalf("within the refresh interval: %v, want ErrIssuerUnavailable (no refetch yet)", err)
	}
	c.advance(oauth.DefaultRefreshInterval)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("issuer back: %v", err)
	}
	// Down again later: the cached keys still serve known kids; a new
	// kid cannot be checked.
	as.SetDown(true)
	c.advance(oauth.DefaultRefreshInterval)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("issuer down, key cached: %v", err)
	}
	if _, err := v.Verify(context.Background(), as.Mint(t, oauthtest.Token{Audience: resource, KeyID: "new"})); !errors.Is(err, oauth.ErrIssuerUnavailable) {
		t.Fatalf("issuer down, new kid: %v, want ErrIssuerUnavailable", err)
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	tests := map[string]oauth.Options{
		"no issuer":        {Resource: resource},
		"http issuer":      {Issuers: []string{"http://auth.example.com"}, Resource: resource},
		"relative":         {Issuers: []string{"https://auth.example.com"}, Resource: "/mcp"},
		"fragment":         {Issuers: []string{"https://auth.example.com"}, Resource: resource + "#x"},
		"scope with space": {Issuers: []string{"https://auth.example.com"}, Resource: resource, Scopes: []string{"a b"}},
	}
	for name, o := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := oauth.New(&o); err == nil {
				t.Error("New accepted it")
			}
		})
	}
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	v, err := oauth.New(&oauth.Options{Issuers: []string{"https://auth.example.com"}, Resource: resource, Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"],"scopes_supported":["mcp:tools"],"bearer_methods_supported":["header"]}`
	if got := string(v.Metadata()); got != want {
		t.Errorf("Metadata:\n got %s\nwant %s", got, want)
	}
	if got, want := v.MetadataURL(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"; got != want {
		t.Errorf("MetadataURL = %s, want %s", got, want)
	}
}

func BenchmarkVerify(b *testing.B) {
	as := oauthtest.New(b)
	v := newVerifier(b, as, nil)
	tok := as.Mint(b, oauthtest.Token{Audience: resource, Scope: "mcp:tools"})
	if _, err := v.Verify(context.Background(), tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
	}
}

// A token that verified is taken at its word again (VerifiedTTL), but
// never past its exp, and its scopes are checked each time.
func TestVerifiedTokensReused(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	c := new(clock)
	v := newVerifier(t, as, c)
	tok := as.Mint(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools", Expiry: time.Now().Add(30 * time.Second)})
	for range 2 {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
	}
	c.advance(30*time.Second + oauth.DefaultLeeway + time.Second)
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, oauth.ErrInvalidToken) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("past its exp: %v, want expired", err)
	}
	narrow := as.Mint(t, oauthtest.Token{Audience: resource, Scope: "other"})
	for range 2 {
		if _, err := v.Verify(context.Background(), narrow); !errors.Is(err, oauth.ErrInsufficientScope) {
			t.Errorf("without the scope: %v", err)
		}
	}
}
