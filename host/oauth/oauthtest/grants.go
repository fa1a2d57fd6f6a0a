package oauthtest

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// grants is the state of the token endpoint: clients, codes, refresh
// tokens, and what tests look at.
type grants struct {
	mu       sync.Mutex
	clients  map[string]string // client id → secret ("" for a public client)
	codes    map[string]code
	refresh  map[string]refreshGrant // live refresh tokens
	ttl      time.Duration           // access tokens' lifetime
	scopes   []string                // what a client may be granted; nil: anything asked
	asked    []string                // the scope of each authorization and client credentials request, in order
	requests map[string]int          // token requests, by grant type
	refuse   string                  // an error every token request gets, "" for none
}

type code struct {
	client, redirect, challenge, scope, resource string
}

type refreshGrant struct {
	client, scope, resource string
}

func (g *grants) init() {
	g.clients = map[string]string{}
	g.codes = map[string]code{}
	g.refresh = map[string]refreshGrant{}
	g.requests = map[string]int{}
	g.ttl = time.Hour
}

// metadata is the server's RFC 8414 document.
func (s *Server) metadata() map[string]any {
	return map[string]any{
		"issuer":                                s.URL,
		"jwks_uri":                              s.URL + "/jwks",
		"authorization_endpoint":                s.URL + "/authorize",
		"token_endpoint":                        s.URL + "/token",
		"registration_endpoint":                 s.URL + "/register",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
	}
}

// AddClient registers a confidential client (a pre-registered one, or
// the identity of a client credentials grant).
func (s *Server) AddClient(id, secret string) {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	s.g.clients[id] = secret
}

// SetTokenTTL sets the lifetime of the access tokens issued from now on.
func (s *Server) SetTokenTTL(d time.Duration) {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	s.g.ttl = d
}

// LimitScopes makes the server grant only these scopes (a request for
// another gets invalid_scope); nil grants anything asked.
func (s *Server) LimitScopes(scopes ...string) {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	s.g.scopes = scopes
}

// RefuseTokens makes every token request fail with the OAuth error code
// (invalid_grant, ...), or serve again ("").
func (s *Server) RefuseTokens(code string) {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	s.g.refuse = code
}

// RevokeRefreshTokens invalidates every refresh token issued so far.
func (s *Server) RevokeRefreshTokens() {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	clear(s.g.refresh)
}

// TokenRequests counts the token requests of grant type grant so far.
func (s *Server) TokenRequests(grant string) int {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return s.g.requests[grant]
}

// Asked is the scope of each authorization request and client credentials
// request so far, in order.
func (s *Server) Asked() []string {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return append([]string(nil), s.g.asked...)
}

// routes adds the authorization, token and registration endpoints.
func (s *Server) routes(mux *http.ServeMux, t testing.TB) {
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var meta struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || len(meta.RedirectURIs) == 0 {
			oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "redirect_uris are required")
			return
		}
		id := "dcr-" + rand.Text()
		s.AddClient(id, "")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": id, "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		redirect, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || redirect.Scheme != "http" || redirect.Hostname() != "127.0.0.1" {
			http.Error(w, "redirect_uri: not a loopback URL", http.StatusBadRequest)
			return
		}
		answer := redirect.Query()
		answer.Set("state", q.Get("state"))
		s.g.mu.Lock()
		_, known := s.g.clients[q.Get("client_id")]
		s.g.asked = append(s.g.asked, q.Get("scope"))
		switch {
		case !known:
			answer.Set("error", "unauthorized_client")
		case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
			answer.Set("error", "invalid_request")
			answer.Set("error_description", "PKCE S256 is required")
		case q.Get("resource") == "":
			answer.Set("error", "invalid_target")
			answer.Set("error_description", "resource is required")
		case !s.g.allowed(q.Get("scope")):
			answer.Set("error", "invalid_scope")
		default:
			c := rand.Text()
			s.g.codes[c] = code{client: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
				scope: q.Get("scope"), resource: q.Get("resource")}
			answer.Set("code", c)
		}
		s.g.mu.Unlock()
		redirect.RawQuery = answer.Encode()
		http.Redirect(w, r, redirect.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
			return
		}
		grant := r.PostForm.Get("grant_type")
		s.g.mu.Lock()
		s.g.requests[grant]++
		client, status, errCode := s.g.client(r)
		var scope, resource string
		switch {
		case errCode != "":
		case s.g.refuse != "":
			status, errCode = http.StatusBadRequest, s.g.refuse
		case grant == "client_credentials":
			scope, resource = r.PostForm.Get("scope"), r.PostForm.Get("resource")
			s.g.asked = append(s.g.asked, scope)
			if s.g.clients[client] == "" {
				status, errCode = http.StatusUnauthorized, "unauthorized_client"
			} else if !s.g.allowed(scope) {
				status, errCode = http.StatusBadRequest, "invalid_scope"
			}
		case grant == "authorization_code":
			c, ok := s.g.codes[r.PostForm.Get("code")]
			delete(s.g.codes, r.PostForm.Get("code"))
			scope, resource = c.scope, c.resource
			if !ok || c.client != client || c.redirect != r.PostForm.Get("redirect_uri") ||
				oauth2.S256ChallengeFromVerifier(r.PostForm.Get("code_verifier")) != c.challenge ||
				r.PostForm.Get("resource") != c.resource {
				status, errCode = http.StatusBadRequest, "invalid_grant"
			}
		case grant == "refresh_token":
			rt, ok := s.g.refresh[r.PostForm.Get("refresh_token")]
			delete(s.g.refresh, r.PostForm.Get("refresh_token")) // rotated: each is good once
			scope, resource = rt.scope, rt.resource
			if !ok || rt.client != client || r.PostForm.Get("resource") != rt.resource {
				status, errCode = http.StatusBadRequest, "invalid_grant"
			}
		default:
			status, errCode = http.StatusBadRequest, "unsupported_grant_type"
		}
		if errCode == "" && resource == "" {
			status, errCode = http.StatusBadRequest, "invalid_target"
		}
		ttl := s.g.ttl
		var refresh string
		if errCode == "" && grant != "client_credentials" {
			refresh = rand.Text()
			s.g.refresh[refresh] = refreshGrant{client: client, scope: scope, resource: resource}
		}
		s.g.mu.Unlock()
		if errCode != "" {
			oauthError(w, status, errCode, "")
			return
		}
		access, err := s.mint(Token{Audience: resource, Scope: scope, ClientID: client, Expiry: time.Now().Add(ttl)})
		if err != nil {
			t.Errorf("oauthtest: mint: %v", err)
			oauthError(w, http.StatusInternalServerError, "server_error", "")
			return
		}
		answer := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(ttl.Seconds()), "scope": scope}
		if refresh != "" {
			answer["refresh_token"] = refresh
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, answer)
	})
}

// client authenticates the token request's client (HTTP Basic, the
// form's client_secret, or a public client's client_id alone).
func (g *grants) client(r *http.Request) (id string, status int, errCode string) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	want, ok := g.clients[id]
	if !ok || want != secret {
		return id, http.StatusUnauthorized, "invalid_client"
	}
	return id, 0, ""
}

// allowed reports whether scope (space-separated) may be granted.
func (g *grants) allowed(scope string) bool {
	if g.scopes == nil {
		return true
	}
	for _, s := range strings.Fields(scope) {
		ok := false
		for _, a := range g.scopes {
			ok = ok || a == s
		}
		if !ok {
			return false
		}
	}
	return true
}

func oauthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	answer := map[string]string{"error": code}
	if description != "" {
		answer["error_description"] = description
	}
	json.NewEncoder(w).Encode(answer)
}
