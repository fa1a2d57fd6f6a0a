package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A real authorization server for the end-to-end tests: oidc-provider
// (pinned in conformance/package.json, an OpenID-certified implementation
// we did not write) run by conformance/oidc-provider.mjs on the Node 22 of
// conformance/node_modules. It issues JWT access tokens by the client
// credentials grant, each for the one resource it was asked for (RFC 8707):
//
//	op := startOIDCProvider(t)
//	token := op.Token(t, oidcAlice, "https://mcp.example.com/mcp", "mcp:tools")
//	cfg := op.AuthBlock("https://mcp.example.com/mcp", "mcp:tools") // plughost's auth { … } for it
//
// A JWT's claims: iss the provider's Issuer, sub and client_id the
// client's id (with client credentials the identity is the client), aud
// the resource, scope the requested scopes that are among oidcScopes,
// groups the client's (oidcClients), exp 10 minutes on (1 s for
// oidcShortLived), jti; its header: typ "at+jwt", alg RS256, kid the
// signing key's RFC 7638 thumbprint. The tokens for a resource named when
// the provider starts (startOIDCProvider's opaque) are opaque instead:
// plughost checks them at the provider's introspection endpoint, whose
// answer has the same claims less sub and jti (oidc-provider leaves them
// out for client credentials).
//
// People sign in too, through a browser: the end users oidcAccounts, by
// the authorization code grant with PKCE S256 for the public client
// oidcConsoleClient (plughost's console), at oidc-provider's development
// login page (GET /interaction/UID: input[name=login] — an account —,
// input[name=password] — anything —, button "Sign-in"; then the consent
// page, button "Continue"). The redirect URI is
// http://127.0.0.1:PORT/console/oauth/callback on any PORT (a native
// client's loopback redirect, RFC 8252 §7.3). The authorization and token
// requests must name the resource (RFC 8707); the access token is then a
// JWT as above whose sub is the account, client_id oidcConsoleClient, and
// groups the account's. A login that is no account gets no code.
var oidcProviderScript = filepath.Join("..", "..", "conformance", "oidc-provider.mjs")

// The provider's clients, by id: the identities tokens speak for.
const (
	oidcAlice      = "alice"      // groups writers, readers
	oidcBob        = "bob"        // groups readers
	oidcShortLived = "shortlived" // groups readers; its tokens expire 1 s after they are issued

	// oidcIntrospector is the resource server's client, the only one the
	// introspection endpoint answers (secret "plughost-secret").
	oidcIntrospector = "plughost"
)

// oidcClients are the provider's clients and their "groups" claims
// (conformance/oidc-provider.mjs's CLIENTS). Each one's secret is
// "<id>-secret".
var oidcClients = map[string][]string{
	oidcAlice:      {"writers", "readers"},
	oidcBob:        {"readers"},
	oidcShortLived: {"readers"},
}

// The end users (conformance/oidc-provider.mjs's ACCOUNTS) and their
// "groups" claims: people who sign in to the console in a browser. Their
// names are the clients' too, but their groups are not: a token's groups
// are the account's when a person signed in, the client's otherwise.
var oidcAccounts = map[string][]string{
	"alice": {"ops", "readers"},
	"bob":   {"readers"},
}

// oidcConsoleClient is the console's client at the provider: public (no
// secret), PKCE S256, the authorization code grant, a loopback redirect
// URI on any port.
const oidcConsoleClient = "plughost-console"

// oidcScopes are the scopes the provider grants for any resource: a token
// asked for others does not carry them.
var oidcScopes = []string{"mcp:tools", "mcp:admin"}

// oidcProvider is a running conformance/oidc-provider.mjs.
type oidcProvider struct {
	issuer string
	secret string // a file holding oidcIntrospector's secret, for AuthBlock
	stdin  io.WriteCloser
	lines  chan []byte   // its stdout, line by line; closed at EOF
	stderr *lineBuffer   // its log (oidc-provider's warnings), shown when the test fails
	exited chan struct{} // closed when the process has been waited for
	kid    string        // the current signing key's id
}

// startOIDCProvider starts an authorization server on 127.0.0.1 at a free
// port and returns once it serves (it prints its issuer when it listens:
// no polling). Its tokens for the resources named in opaque are opaque,
// for introspection; for any other resource, JWTs. It stops when the test
// ends.
func startOIDCProvider(t *testing.T, opaque ...string) *oidcProvider {
	t.Helper()
	for _, f := range []string{nodeBin, oidcProviderScript} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v\nthe OAuth tests against a real authorization server need Node 22 and oidc-provider: run `npm ci` in conformance/ (make test and .ci/run do)", err)
		}
	}
	script, _ := filepath.Abs(oidcProviderScript)
	args := []string{script}
	for _, r := range opaque {
		args = append(args, "--opaque", r)
	}
	cmd := exec.Command(nodeBin, args...)
	p := &oidcProvider{lines: make(chan []byte, 4), stderr: newLineBuffer(), exited: make(chan struct{}),
		secret: filepath.Join(t.TempDir(), "introspection.secret")}
	if err := os.WriteFile(p.secret, []byte(oidcIntrospector+"-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(p.lines)
		cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stdin.Close() // the script exits when its stdin closes
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-p.exited
			t.Errorf("oidc-provider.mjs did not exit within 10 s of its stdin closing")
		}
		if t.Failed() {
			t.Logf("oidc-provider.mjs stderr:\n%s", p.stderr)
		}
	})
	var ready struct{ Issuer, Kid string }
	p.read(t, &ready)
	if ready.Issuer == "" || ready.Kid == "" {
		t.Fatalf("oidc-provider.mjs: no issuer or kid in its first line")
	}
	p.issuer, p.kid = ready.Issuer, ready.Kid
	return p
}

// read decodes the script's next stdout line into v.
func (p *oidcProvider) read(t *testing.T, v any) {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			t.Fatalf("oidc-provider.mjs exited:\n%s", p.stderr)
		}
		if err := json.Unmarshal(line, v); err != nil {
			t.Fatalf("oidc-provider.mjs wrote %q: %v", line, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("oidc-provider.mjs said nothing for 30 s:\n%s", p.stderr)
	}
}

// command sends one command line and decodes its answer into v. Commands
// are not meant to be sent concurrently.
func (p *oidcProvider) command(t *testing.T, cmd string, v any) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		t.Fatalf("oidc-provider.mjs: %s: %v", cmd, err)
	}
	p.read(t, v)
}

// Issuer is the provider's issuer identifier, http://127.0.0.1:PORT: what
// plughost's auth block names as issuer.
func (p *oidcProvider) Issuer() string { return p.issuer }

// KeyID is the id (kid) of the key that signs the tokens issued now.
func (p *oidcProvider) KeyID() string { return p.kid }

// AuthBlock is plughost's configuration for this provider: an auth block
// accepting its tokens for resource with scopes, JWTs and (through its
// introspection endpoint, as oidcIntrospector) opaque ones, with a leeway
// of 0 s (so that an expired token is refused at once).
func (p *oidcProvider) AuthBlock(resource string, scopes ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "auth {\n  issuer   = %q\n  resource = %q\n  leeway   = \"0s\"\n", p.issuer, resource)
	fmt.Fprintf(&b, "  introspection_endpoint = %q\n  client_id = %q\n  client_secret_file = %q\n",
		p.issuer+"/token/introspection", oidcIntrospector, p.secret)
	if len(scopes) > 0 {
		q, _ := json.Marshal(scopes)
		fmt.Fprintf(&b, "  scopes   = %s\n", q)
	}
	b.WriteString("}\n")
	return b.String()
}

// Token asks the provider for an access token: the client credentials
// grant for clientID (one of oidcClients), for resource, with scopes
// (those not among oidcScopes are left out of the token, none means a
// token without a scope claim). It fails the test unless the provider
// issues one.
func (p *oidcProvider) Token(t *testing.T, clientID, resource string, scopes ...string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	req, err := http.NewRequestWithContext(t.Context(), "POST", p.issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, clientID+"-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		AccessToken      string `json:"access_token"`
		TokenType        string `json:"token_type"`
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&answer); err != nil {
		t.Fatalf("token endpoint: %d: %v", resp.StatusCode, err)
	}
	if resp.StatusCode != 200 || answer.AccessToken == "" || answer.TokenType != "Bearer" {
		t.Fatalf("token endpoint for %s: %d %s: %s", clientID, resp.StatusCode, answer.Error, answer.ErrorDescription)
	}
	return answer.AccessToken
}

// Rotate makes a new key the signing key, published first in the JWKS;
// the older keys stay published, so the tokens they signed still verify.
// The provider is built anew on the same listener (same issuer, same
// port). Rotate returns the new key's id.
func (p *oidcProvider) Rotate(t *testing.T) string {
	t.Helper()
	var answer struct {
		Rotated string
		Kids    []string
	}
	p.command(t, "rotate", &answer)
	if answer.Rotated == "" || answer.Rotated == p.kid {
		t.Fatalf("oidc-provider.mjs: rotate: new kid %q (was %q)", answer.Rotated, p.kid)
	}
	p.kid = answer.Rotated
	return p.kid
}

// JWKSFetches is how many times a resource server fetched the provider's
// keys (GET /jwks), and when it last did (zero if never).
func (p *oidcProvider) JWKSFetches(t *testing.T) (int, time.Time) {
	t.Helper()
	var answer struct {
		Fetches int   `json:"jwks_fetches"`
		LastMS  int64 `json:"last_jwks_fetch_ms"`
	}
	p.command(t, "stats", &answer)
	var last time.Time
	if answer.LastMS > 0 {
		last = time.UnixMilli(answer.LastMS)
	}
	return answer.Fetches, last
}

// jwtParts decodes a JWT's header and claims, unverified: what a test
// reads of a token it was given (its kid, its exp).
func jwtParts(t *testing.T, token string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWS: %d parts", len(parts))
	}
	for i, dst := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err == nil {
			err = json.Unmarshal(b, dst)
		}
		if err != nil {
			t.Fatalf("JWT part %d: %v", i, err)
		}
	}
	return header, claims
}
