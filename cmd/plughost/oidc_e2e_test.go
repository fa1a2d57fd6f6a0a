package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/oauth"
)

// The tests of this file hold serve --http's OAuth resource server to the
// tokens of a real authorization server, oidc-provider (see
// oidc_helpers_test.go), where oauth_e2e_test.go uses our own
// host/oauth/oauthtest.

// oidcResource is the resource URL plughost is configured with: the
// audience of the tokens it accepts. (Clients reach it at 127.0.0.1; the
// resource is a name, which need not resolve.)
const oidcResource = "https://mcp.example.com/mcp"

// startOIDCHost starts serve --http with the echo plugin and an auth block
// accepting op's tokens for resource with scopes; it returns the host and
// the path of its audit log.
func startOIDCHost(t *testing.T, op *oidcProvider, resource string, scopes ...string) (*httpHost, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plughost.hcl")
	if err := os.WriteFile(cfg, []byte(op.AuthBlock(resource, scopes...)), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(dir, "audit.jsonl")
	return startHTTPHostWith(t, []string{"--config", cfg, "--audit-log", audit}, "echo"), audit
}

// callEcho calls the echo tool through the go-sdk client with token, and
// fails the test unless the call works.
func callEcho(t *testing.T, h *httpHost, token string) {
	t.Helper()
	hc := h.httpClient(nil)
	hc.Transport = bearer{hc.Transport, token}
	cs := h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: hc}, nil)
	defer cs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("echo with the token: %v %v", res, err)
	}
}

// initMsg is a 2025-11-25 initialize request.
const initMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// refusal POSTs initialize with token and returns the status, the
// WWW-Authenticate header and the body.
func refusal(t *testing.T, h *httpHost, token string) (int, string, string) {
	t.Helper()
	resp, body := postMCP(t, h, token, "", initMsg)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body
}

// postMCP POSTs msg to /mcp with token, in session sid unless "", and
// returns the response (its body read) and its body.
func postMCP(t *testing.T, h *httpHost, token, sid, msg string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", h.base+"/mcp", strings.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// checkNoTokenLogged fails the test when plughost's log (h stopped) holds
// any of tokens, whole or its signature alone.
func checkNoTokenLogged(t *testing.T, h *httpHost, tokens []string) {
	t.Helper()
	log := h.stderr.String()
	for _, tok := range tokens {
		sig := tok[strings.LastIndexByte(tok, '.')+1:]
		if strings.Contains(log, tok) || strings.Contains(log, sig) {
			t.Errorf("the log shows a token (%d bytes)", len(tok))
		}
	}
}

// TestServeOIDC: serve --http against oidc-provider's real tokens, one host
// needing the scopes mcp:tools and mcp:admin:
//   - valid: alice's token (typ at+jwt, RS256, a thumbprint kid, aud the
//     resource as a string, scope a string, groups) calls a tool, and the
//     audit log names alice;
//   - expired: a token of the 1-second client, once its exp has passed, gets
//     401 invalid_token "the token has expired" with the challenge;
//   - wrong audience: a token minted for another resource gets 401;
//   - step-up: a token with mcp:tools alone gets 403 insufficient_scope
//     naming mcp:admin; a new token with both calls the tool.
//
// No token, nor its signature, shows in the log.
func TestServeOIDC(t *testing.T) {
	t.Parallel()
	op := startOIDCProvider(t)
	h, audit := startOIDCHost(t, op, oidcResource, "mcp:tools", "mcp:admin")
	var tokens []string // every token handed to plughost
	token := func(client, resource string, scopes ...string) string {
		tok := op.Token(t, client, resource, scopes...)
		tokens = append(tokens, tok)
		return tok
	}
	challenge := `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools mcp:admin"`

	t.Run("valid", func(t *testing.T) {
		tok := token(oidcAlice, oidcResource, oidcScopes...)
		header, claims := jwtParts(t, tok)
		if header["typ"] != "at+jwt" || header["alg"] != "RS256" || header["kid"] != op.KeyID() {
			t.Errorf("header %v: want typ at+jwt, alg RS256, kid %s", header, op.KeyID())
		}
		if claims["aud"] != oidcResource || claims["sub"] != oidcAlice || claims["scope"] != "mcp:tools mcp:admin" ||
			claims["iss"] != op.Issuer() {
			t.Errorf("claims %v", claims)
		}
		if g, ok := claims["groups"].([]any); !ok || len(g) != len(oidcClients[oidcAlice]) {
			t.Errorf("groups %v, want %v", claims["groups"], oidcClients[oidcAlice])
		}
		callEcho(t, h, tok)
	})

	t.Run("expired", func(t *testing.T) {
		tok := token(oidcShortLived, oidcResource, oidcScopes...)
		_, claims := jwtParts(t, tok)
		exp, ok := claims["exp"].(float64)
		if !ok {
			t.Fatalf("no exp: %v", claims)
		}
		// Expiry is the clock passing exp (leeway 0s): no event stands for
		// it, so this waits for the time itself (under 1 s: the token's
		// lifetime).
		<-time.After(time.Until(time.Unix(int64(exp), 0).Add(10 * time.Millisecond)))
		status, www, body := refusal(t, h, tok)
		want := challenge + `, error="invalid_token", error_description="the token has expired"`
		if status != 401 || www != want || !strings.Contains(body, "expired") {
			t.Errorf("expired token: %d %q %s\nwant 401 %q", status, www, body, want)
		}
	})

	t.Run("wrong audience", func(t *testing.T) {
		tok := token(oidcAlice, "https://other.example.com/mcp", oidcScopes...)
		status, www, body := refusal(t, h, tok)
		want := challenge + `, error="invalid_token", error_description="the token is for another resource (audience)"`
		if status != 401 || www != want {
			t.Errorf("a token for another resource: %d %q %s\nwant 401 %q", status, www, body, want)
		}
	})

	t.Run("step-up", func(t *testing.T) {
		status, www, body := refusal(t, h, token(oidcBob, oidcResource, "mcp:tools"))
		want := challenge + `, error="insufficient_scope", error_description="the token lacks the scope mcp:admin"`
		if status != 403 || www != want || !strings.Contains(body, "mcp:admin") {
			t.Errorf("a token without mcp:admin: %d %q %s\nwant 403 %q", status, www, body, want)
		}
		// The client asks again with the scopes the challenge named.
		callEcho(t, h, token(oidcBob, oidcResource, "mcp:tools", "mcp:admin"))
	})

	h.stop()
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{oidcAlice, oidcBob} {
		if !strings.Contains(string(b), `"caller":{"sub":"`+who+`","client":"`+who+`"}`) {
			t.Errorf("the audit log does not name %s:\n%s", who, b)
		}
	}
	checkNoTokenLogged(t, h, tokens)
}

// TestServeOIDCKeyRotation: the authorization server rotates its signing
// key (the new key published first, the old one kept). A token signed by
// the new key is accepted — plughost did not know its kid, so it fetched
// the JWKS again — and a token signed by the old key still is, since that
// key is still published. No token shows in the log.
func TestServeOIDCKeyRotation(t *testing.T) {
	t.Parallel()
	op := startOIDCProvider(t)
	h, _ := startOIDCHost(t, op, oidcResource, "mcp:tools")
	old := op.Token(t, oidcAlice, oidcResource, "mcp:tools")
	callEcho(t, h, old)
	fetches, last := op.JWKSFetches(t)
	if fetches == 0 {
		t.Fatal("plughost verified a token without fetching the JWKS")
	}

	oldKid := op.KeyID()
	newKid := op.Rotate(t)
	fresh := op.Token(t, oidcAlice, oidcResource, "mcp:tools")
	if header, _ := jwtParts(t, fresh); header["kid"] != newKid {
		t.Fatalf("after rotate, a token signed with kid %v, want %s (was %s)", header["kid"], newKid, oldKid)
	}
	// An unknown kid refetches the JWKS at most once per RefreshInterval
	// after the last fetch (a bound on floods of made-up kids): a token of
	// a key rotated in sooner is refused until then. The provider saw that
	// fetch arrive, after plughost began it; waiting out the bound from
	// there is waiting for the clock, not for an event.
	<-time.After(time.Until(last.Add(oauth.DefaultRefreshInterval)))
	callEcho(t, h, fresh)
	if n, _ := op.JWKSFetches(t); n != fetches+1 {
		t.Errorf("JWKS fetches: %d before the rotation, %d after, want one more", fetches, n)
	}
	callEcho(t, h, old)

	h.stop()
	checkNoTokenLogged(t, h, []string{old, fresh})
}

// TestServeOIDCIntrospection: the provider issues opaque tokens for this
// resource, which plughost checks at its introspection endpoint (as the
// client "plughost"). Alice's token calls a tool; the answer has no "sub"
// (oidc-provider leaves it out for client credentials), and the caller is
// still alice — in the audit log, and as the owner of her session, which
// Bob's token may not use (403) though Alice's may. No token, nor the
// introspection client's secret, shows in the log.
func TestServeOIDCIntrospection(t *testing.T) {
	t.Parallel()
	const resource = "https://opaque.example.com/mcp"
	op := startOIDCProvider(t, resource)
	h, audit := startOIDCHost(t, op, resource, "mcp:tools")
	alice := op.Token(t, oidcAlice, resource, "mcp:tools")
	bob := op.Token(t, oidcBob, resource, "mcp:tools")
	if strings.Count(alice, ".") == 2 {
		t.Fatalf("the provider issued a JWT for %s, want an opaque token", resource)
	}
	callEcho(t, h, alice)

	resp, body := postMCP(t, h, alice, "", initMsg)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize with Alice's token: %d %s", resp.StatusCode, body)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if resp, body := postMCP(t, h, bob, sid, ping); resp.StatusCode != 403 || !strings.Contains(body, "another caller") {
		t.Errorf("Bob's token in Alice's session: %d %s, want 403", resp.StatusCode, body)
	}
	if resp, body := postMCP(t, h, alice, sid, ping); resp.StatusCode != 200 {
		t.Errorf("Alice's token in her session: %d %s, want 200", resp.StatusCode, body)
	}

	h.stop()
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"caller":{"sub":"alice","client":"alice"}`) {
		t.Errorf("the audit log does not name alice:\n%s", b)
	}
	checkNoTokenLogged(t, h, []string{alice, bob})
	if strings.Contains(h.stderr.String(), oidcIntrospector+"-secret") {
		t.Error("the log shows the introspection client's secret")
	}
}
