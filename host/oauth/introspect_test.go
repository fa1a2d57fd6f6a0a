package oauth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/oauth"
	"github.com/plughost/plughost/host/oauth/oauthtest"
)

func newIntrospecting(t *testing.T, as *oauthtest.Server, c *clock, secret string) *oauth.Verifier {
	t.Helper()
	v, err := oauth.New(&oauth.Options{Issuers: []string{as.URL}, Resource: resource, Scopes: []string{"mcp:tools"}, Now: c.now,
		Introspection: &oauth.Introspection{Endpoint: as.URL + "/introspect", ClientID: oauthtest.ClientID, ClientSecret: secret}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestIntrospect(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	v := newIntrospecting(t, as, new(clock), oauthtest.ClientSecret)
	now := time.Now()
	ok := oauthtest.Token{Audience: resource, Scope: "mcp:tools", Subject: "bob", ClientID: "cli", ID: "o-1"}
	with := func(f func(*oauthtest.Token)) string { tok := ok; f(&tok); return as.Opaque(t, tok) }
	tests := map[string]struct {
		token   string
		wantErr error
		wantMsg string
	}{
		"active":         {token: as.Opaque(t, ok)},
		"a JWT still":    {token: as.Mint(t, ok)},
		"unknown":        {token: "opaque-never-issued", wantErr: oauth.ErrInvalidToken, wantMsg: "not active"},
		"wrong audience": {token: with(func(k *oauthtest.Token) { k.Audience = "https://other.example.com/mcp" }), wantErr: oauth.ErrInvalidToken, wantMsg: "another resource"},
		"wrong issuer":   {token: with(func(k *oauthtest.Token) { k.Issuer = "https://evil.example.com" }), wantErr: oauth.ErrInvalidToken, wantMsg: "not trusted"},
		"expired":        {token: with(func(k *oauthtest.Token) { k.Expiry = now.Add(-2 * time.Minute) }), wantErr: oauth.ErrInvalidToken, wantMsg: "expired"},
		"not yet valid":  {token: with(func(k *oauthtest.Token) { k.NotBefore = now.Add(2 * time.Minute) }), wantErr: oauth.ErrInvalidToken, wantMsg: "not valid yet"},
		"missing scope":  {token: with(func(k *oauthtest.Token) { k.Scope = "other" }), wantErr: oauth.ErrInsufficientScope, wantMsg: "mcp:tools"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := v.Verify(context.Background(), tc.token)
			if tc.wantErr == nil {
				if err != nil || c.Subject != "bob" || c.ClientID != "cli" {
					t.Fatalf("Verify: %+v %v", c, err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Verify: %v, want %v saying %q", err, tc.wantErr, tc.wantMsg)
			}
		})
	}
}

// An answer is reused for CacheTTL: a revocation shows after it.
func TestIntrospectCache(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	c := new(clock)
	v := newIntrospecting(t, as, c, oauthtest.ClientSecret)
	token := as.Opaque(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools"})
	for range 3 {
		if _, err := v.Verify(context.Background(), token); err != nil {
			t.Fatal(err)
		}
	}
	if n := as.Introspections(); n != 1 {
		t.Errorf("%d introspections for three checks of one token, want 1", n)
	}
	as.Revoke(token)
	if _, err := v.Verify(context.Background(), token); err != nil {
		t.Errorf("revoked, within the cache's TTL: %v, want the cached answer", err)
	}
	c.advance(61 * time.Second)
	if _, err := v.Verify(context.Background(), token); !errors.Is(err, oauth.ErrInvalidToken) {
		t.Errorf("revoked, after the TTL: %v, want ErrInvalidToken", err)
	}
}

// An endpoint that refuses this server's credentials, or is down, gets
// ErrIssuerUnavailable: the token could not be judged.
func TestIntrospectUnavailable(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	token := as.Opaque(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools"})
	if _, err := newIntrospecting(t, as, new(clock), "wrong").Verify(context.Background(), token); !errors.Is(err, oauth.ErrIssuerUnavailable) ||
		!strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), token) {
		t.Errorf("wrong credentials: %v, want ErrIssuerUnavailable saying 401", err)
	}
	as.SetDown(true)
	if _, err := newIntrospecting(t, as, new(clock), oauthtest.ClientSecret).Verify(context.Background(), token); !errors.Is(err, oauth.ErrIssuerUnavailable) {
		t.Errorf("endpoint down: %v, want ErrIssuerUnavailable", err)
	}
}

// TestCallerWithoutSubject: a token without "sub" speaks for its client.
// oidc-provider's introspection answer for a client credentials token has
// no sub (RFC 7662 makes it optional), and RFC 9068 §2.2 has a JWT of
// such a grant name the client in sub: the caller's Subject is then the
// client id, so that two clients' tokens never pass for one caller (who
// owns a session, what the audit log names).
func TestCallerWithoutSubject(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	v := newIntrospecting(t, as, new(clock), oauthtest.ClientSecret)
	tok := oauthtest.Token{Audience: resource, Scope: "mcp:tools", ClientID: "alice", NoSubject: true}
	for name, token := range map[string]string{"introspected": as.Opaque(t, tok), "JWT": as.Mint(t, tok)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := v.Verify(context.Background(), token)
			if err != nil || c.Subject != "alice" || c.ClientID != "alice" {
				t.Errorf("Verify: %+v %v, want Subject and ClientID alice", c, err)
			}
		})
	}
}
