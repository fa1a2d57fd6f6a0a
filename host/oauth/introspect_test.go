package oauth_test

import (
	"context"
	"errors"
	"strconv"
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

// TestIntrospectKnownGoodNotStarved: a token once answered active, whose
// cached answer has expired, is asked about again through slots of its
// own: it is answered while made-up tokens hold every other slot at an
// endpoint that hangs on them (issue 31, attack 20: 48 made-up tokens
// made a valid one wait 29 s).
func TestIntrospectKnownGoodNotStarved(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	c := new(clock)
	v, err := oauth.New(&oauth.Options{Issuers: []string{as.URL}, Resource: resource, Scopes: []string{"mcp:tools"}, Now: c.now,
		Introspection: &oauth.Introspection{Endpoint: as.URL + "/introspect", ClientID: oauthtest.ClientID, ClientSecret: oauthtest.ClientSecret,
			MaxConcurrent: 4, SlotWait: time.Minute, Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	good := as.Opaque(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools", Subject: "bob", Expiry: time.Now().Add(time.Hour)})
	if _, err := v.Verify(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	c.advance(61 * time.Second) // the answer's CacheTTL is over: it must be asked about again
	as.HangUnknown(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const madeUp = 48
	done := make(chan error, madeUp)
	for i := range madeUp {
		go func() {
			_, err := v.Verify(ctx, "made-up-"+strconv.Itoa(i))
			done <- err
		}()
	}
	as.AwaitHanging(t, 4) // every slot for new tokens is held, 44 more tokens wait for one
	asked := as.Introspections()
	bounded, stop := context.WithTimeout(context.Background(), 10*time.Second) // the test's bound: main waited here
	defer stop()
	if caller, err := v.Verify(bounded, good); err != nil || caller.Subject != "bob" {
		t.Fatalf("the known-good token while made-up ones hang: %+v %v, want bob at once", caller, err)
	}
	if n := as.Introspections(); n != asked+1 {
		t.Errorf("%d introspections for the known-good token, want 1 (asked again, not served stale)", n-asked)
	}
	if n := as.Hanging(); n != 4 {
		t.Errorf("%d made-up tokens hanging after the good one was answered, want still 4", n)
	}
	cancel()
	for range madeUp {
		if err := <-done; !errors.Is(err, oauth.ErrIssuerUnavailable) {
			t.Errorf("a made-up token whose caller left: %v, want ErrIssuerUnavailable", err)
		}
	}
}

// TestIntrospectNewTokensBounded: a token not known good waits at most
// SlotWait for a slot, then is refused as unavailable (503, retry); a
// token whose request failed is refused without asking again for
// FailureTTL.
func TestIntrospectNewTokensBounded(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	c := new(clock)
	v, err := oauth.New(&oauth.Options{Issuers: []string{as.URL}, Resource: resource, Scopes: []string{"mcp:tools"}, Now: c.now,
		Introspection: &oauth.Introspection{Endpoint: as.URL + "/introspect", ClientID: oauthtest.ClientID, ClientSecret: oauthtest.ClientSecret,
			MaxConcurrent: 1, SlotWait: 50 * time.Millisecond, Timeout: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	as.HangUnknown(true)
	held := make(chan error, 1)
	go func() { _, err := v.Verify(context.Background(), "made-up-1"); held <- err }()
	as.AwaitHanging(t, 1)
	if _, err := v.Verify(context.Background(), "made-up-2"); !errors.Is(err, oauth.ErrIssuerUnavailable) ||
		!strings.Contains(err.Error(), "none ended within 50ms") {
		t.Errorf("a new token while the one slot is held: %v, want ErrIssuerUnavailable naming SlotWait", err)
	}
	if err := <-held; !errors.Is(err, oauth.ErrIssuerUnavailable) {
		t.Fatalf("the hanging introspection past Timeout: %v, want ErrIssuerUnavailable", err)
	}
	asked := as.Introspections()
	if _, err := v.Verify(context.Background(), "made-up-1"); !errors.Is(err, oauth.ErrIssuerUnavailable) {
		t.Errorf("the failed token again: %v, want ErrIssuerUnavailable", err)
	}
	if n := as.Introspections(); n != asked {
		t.Errorf("the failed token was asked about again within FailureTTL (%d requests)", n-asked)
	}
	as.HangUnknown(false)
	c.advance(6 * time.Second)
	if _, err := v.Verify(context.Background(), "made-up-1"); !errors.Is(err, oauth.ErrInvalidToken) {
		t.Errorf("the failed token after FailureTTL: %v, want asked again and inactive", err)
	}
}
