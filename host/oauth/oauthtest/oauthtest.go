// Package oauthtest is an authorization server for tests: it serves its
// metadata (RFC 8414) and a JWKS over real HTTP, and mints signed JWT
// access tokens with go-jose, so that a [oauth.Verifier] can be tested
// end to end. Its token endpoint (grants.go) serves an OAuth client under
// test: client credentials, the authorization code with PKCE (its
// authorization endpoint answers at once with the redirect, as a user who
// consents would), refresh with rotation, and Dynamic Client
// Registration; [Protect] puts an MCP handler behind a [oauth.Verifier]
// of its tokens, a resource server for that client to reach.
//
//	as := oauthtest.New(t)
//	token := as.Mint(t, oauthtest.Token{Audience: "http://127.0.0.1:8080/mcp", Scope: "mcp:tools"})
package oauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Server is an authorization server: its URL is its issuer identifier.
type Server struct {
	*httptest.Server
	fetches atomic.Int64 // JWKS requests served
	down    atomic.Bool
	oidc    atomic.Bool  // serve OpenID Connect's discovery only
	intros  atomic.Int64 // introspection requests served

	hangUnknown atomic.Bool   // introspection of a token never issued hangs
	hanging     atomic.Int64  // introspection requests hanging now
	hangEvents  chan struct{} // poked when hanging changes
	unhang      chan struct{} // closed when the test ends: every hanging request returns

	opaque sync.Map // opaque token → its introspection answer

	mu   sync.Mutex
	kid  string            // the current signing key's
	keys map[string]signer // published, by kid
	n    int

	g grants // the token endpoint's state (grants.go)
}

type signer struct {
	key *ecdsa.PrivateKey
}

// New starts a Server with one ES256 key; it stops when the test ends.
func New(t testing.TB) *Server {
	s := &Server{keys: map[string]signer{}, hangEvents: make(chan struct{}, 1), unhang: make(chan struct{})}
	s.g.init()
	mux := http.NewServeMux()
	metadata := func(oidc bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			switch {
			case s.down.Load():
				http.Error(w, "down", http.StatusServiceUnavailable)
			case s.oidc.Load() != oidc:
				http.NotFound(w, r)
			default:
				writeJSON(w, s.metadata())
			}
		}
	}
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", metadata(false))
	mux.HandleFunc("GET /.well-known/openid-configuration", metadata(true))
	mux.HandleFunc("POST /introspect", func(w http.ResponseWriter, r *http.Request) {
		s.intros.Add(1)
		if s.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if id, secret, ok := r.BasicAuth(); !ok || id != ClientID || secret != ClientSecret {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		answer, ok := s.opaque.Load(r.PostFormValue("token"))
		if !ok && s.hangUnknown.Load() {
			s.hang(r)
			return
		}
		if !ok {
			answer = map[string]any{"active": false}
		}
		writeJSON(w, answer)
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		if s.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		s.mu.Lock()
		var set jose.JSONWebKeySet
		for kid, k := range s.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.key.Public(), KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"})
		}
		s.mu.Unlock()
		writeJSON(w, &set)
	})
	s.routes(mux, t)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.unhang) }) // first: Close waits for the hanging requests
	s.Rotate(t)
	return s
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// Rotate makes a new signing key, with a new kid, current and published,
// and withdraws the previous one; it returns the new kid.
func (s *Server) Rotate(t testing.TB) string {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	delete(s.keys, s.kid)
	s.kid = "key-" + strconv.Itoa(s.n)
	s.keys[s.kid] = signer{k}
	return s.kid
}

// The credentials the introspection endpoint (URL + "/introspect") wants.
const (
	ClientID     = "plughost"
	ClientSecret = "rs-secret"
)

// Opaque issues an opaque token whose introspection answers tok's claims
// (active until Revoke).
func (s *Server) Opaque(t testing.TB, tok Token) string {
	b := make([]byte, 24)
	rand.Read(b)
	token := base64.RawURLEncoding.EncodeToString(b)
	answer := map[string]any{"active": true, "iss": or(tok.Issuer, s.URL), "sub": or(tok.Subject, "alice"),
		"client_id": or(tok.ClientID, "test-client"), "scope": tok.Scope, "jti": tok.ID}
	if tok.NoSubject {
		delete(answer, "sub")
	}
	if tok.Audience != "" {
		answer["aud"] = tok.Audience
	}
	exp := tok.Expiry
	if exp.IsZero() {
		exp = time.Now().Add(time.Hour)
	}
	answer["exp"] = exp.Unix()
	if !tok.NotBefore.IsZero() {
		answer["nbf"] = tok.NotBefore.Unix()
	}
	s.opaque.Store(token, answer)
	return token
}

// Revoke makes an opaque token inactive.
func (s *Server) Revoke(token string) { s.opaque.Delete(token) }

// Introspections counts the introspection requests served so far.
func (s *Server) Introspections() int { return int(s.intros.Load()) }

// OpenIDOnly makes the server publish its metadata at OpenID Connect's
// /.well-known/openid-configuration only, not at RFC 8414's path.
func (s *Server) OpenIDOnly() { s.oidc.Store(true) }

// JWKSFetches counts the JWKS requests served so far.
func (s *Server) JWKSFetches() int { return int(s.fetches.Load()) }

// HangUnknown makes the introspection of a token never issued hang
// (true) until its client gives up or the test ends, as an endpoint that
// stalls on made-up tokens; false answers them inactive again.
func (s *Server) HangUnknown(hang bool) { s.hangUnknown.Store(hang) }

// AwaitHanging waits until n introspection requests hang at once, for 10
// seconds at most.
func (s *Server) AwaitHanging(t testing.TB, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for s.hanging.Load() != int64(n) {
		select {
		case <-s.hangEvents:
		case <-timeout:
			t.Fatalf("%d introspection requests hanging after 10s, want %d", s.hanging.Load(), n)
		}
	}
}

// Hanging counts the introspection requests hanging now.
func (s *Server) Hanging() int { return int(s.hanging.Load()) }

func (s *Server) hang(r *http.Request) {
	poke := func() {
		select {
		case s.hangEvents <- struct{}{}:
		default:
		}
	}
	s.hanging.Add(1)
	poke()
	defer poke()
	defer s.hanging.Add(-1)
	select {
	case <-r.Context().Done():
	case <-s.unhang:
	}
}

// SetDown makes the server answer 503 to every request (true) or serve
// again (false).
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// Token describes a token to mint. Zero fields take defaults.
type Token struct {
	// Issuer is "iss"; "" means the server's URL.
	Issuer string
	// Subject is "sub"; "" means "alice".
	Subject string
	// NoSubject leaves "sub" out, as oidc-provider's introspection answer
	// does for a client credentials token.
	NoSubject bool
	// Audience is "aud".
	Audience string
	// Scope is "scope", space-separated.
	Scope string
	// ClientID is "client_id"; "" means "test-client".
	ClientID string
	// ID is "jti".
	ID string
	// Expiry is "exp"; zero means an hour from now. NotBefore is "nbf",
	// absent when zero.
	Expiry, NotBefore time.Time
	// KeyID names the kid in the header; "" means the current key's. A
	// kid the server does not know is signed with the current key.
	KeyID string
	// Foreign signs with a key the server never published (kid
	// unchanged): a bad signature.
	Foreign bool
	// Claims are further claims ("groups", say); they do not replace the
	// ones above.
	Claims map[string]any
}

// Mint signs tok's claims with ES256.
func (s *Server) Mint(t testing.TB, tok Token) string {
	raw, err := s.mint(tok)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// mint is Mint, failing with an error (the token endpoint's goroutine may
// not end the test).
func (s *Server) mint(tok Token) (string, error) {
	s.mu.Lock()
	kid := tok.KeyID
	if kid == "" {
		kid = s.kid
	}
	k, ok := s.keys[kid]
	if !ok {
		k = s.keys[s.kid]
	}
	s.mu.Unlock()
	if tok.Foreign {
		var err error
		if k.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return "", err
		}
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k.key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader(jose.HeaderKey("kid"), kid))
	if err != nil {
		return "", err
	}
	c := jwt.Claims{Issuer: or(tok.Issuer, s.URL), Subject: or(tok.Subject, "alice"), ID: tok.ID,
		IssuedAt: jwt.NewNumericDate(time.Now()), Expiry: jwt.NewNumericDate(tok.Expiry)}
	if tok.Audience != "" {
		c.Audience = jwt.Audience{tok.Audience}
	}
	if tok.NoSubject {
		c.Subject = ""
	}
	if tok.Expiry.IsZero() {
		c.Expiry = jwt.NewNumericDate(time.Now().Add(time.Hour))
	}
	if !tok.NotBefore.IsZero() {
		c.NotBefore = jwt.NewNumericDate(tok.NotBefore)
		c.IssuedAt = c.NotBefore
	}
	extra := map[string]any{}
	for k, v := range tok.Claims {
		extra[k] = v
	}
	extra["client_id"] = or(tok.ClientID, "test-client")
	if tok.Scope != "" {
		extra["scope"] = tok.Scope
	}
	return jwt.Signed(sig).Claims(c).Claims(extra).Serialize()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
