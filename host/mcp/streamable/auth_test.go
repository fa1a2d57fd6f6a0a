package streamable

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
	"github.com/plughost/plughost/host/oauth"
	"github.com/plughost/plughost/host/oauth/oauthtest"
)

// testResource is the resource the OAuth tests' server calls itself: a
// token's audience must name it, wherever the server listens.
const testResource = "https://mcp.example.com/mcp"

// startOAuth serves with a Verifier trusting as, needing scope mcp:tools;
// calls reports the calls' ends.
func startOAuth(t *testing.T, as *oauthtest.Server, opts *Options) (*httpServer, *callEnds) {
	t.Helper()
	v, err := oauth.New(&oauth.Options{Issuers: []string{as.URL}, Resource: testResource, Scopes: []string{"mcp:tools"}})
	if err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &Options{}
	}
	opts.OAuth = v
	ends := new(callEnds)
	return startHTTPWith(t, opts, mcp.Options{OnCallEnd: ends.add}), ends
}

// callEnds collects the calls' ends.
type callEnds struct {
	mu   sync.Mutex
	ends []mcp.CallEnd
}

func (c *callEnds) add(e *mcp.CallEnd) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ends = append(c.ends, *e)
}

func (c *callEnds) callers() []mcp.Caller {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []mcp.Caller
	for _, e := range c.ends {
		out = append(out, e.Peer.Caller)
	}
	return out
}

// bearerTransport adds Authorization: Bearer to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestOAuthGoSDKClient: the go-sdk client with a valid token initializes
// and calls a tool, in both protocol eras; the call's end names the caller.
func TestOAuthGoSDKClient(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	hs, ends := startOAuth(t, as, nil)
	token := as.Mint(t, oauthtest.Token{Audience: testResource, Scope: "mcp:tools", Subject: "alice", ClientID: "cli"})
	for name, opts := range map[string]*sdk.ClientSessionOptions{"session": sessionEra, "stateless": nil} {
		t.Run(name, func(t *testing.T) {
			client, _, _, _ := mcptest.SDKClient()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs.url + PathMCP,
				HTTPClient: &http.Client{Transport: bearerTransport{token}}}, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
		})
	}
	want := mcp.Caller{Subject: "alice", ClientID: "cli", Issuer: as.URL, Scopes: []string{"mcp:tools"}}
	got := ends.callers()
	if len(got) != 2 {
		t.Fatalf("%d call ends, want 2", len(got))
	}
	for _, c := range got {
		if c.Subject != want.Subject || c.ClientID != want.ClientID || c.Issuer != want.Issuer || strings.Join(c.Scopes, " ") != "mcp:tools" {
			t.Errorf("caller %+v, want %+v", c, want)
		}
	}
}

// TestOAuthRefusals: each bad request gets its precise status,
// WWW-Authenticate and JSON-RPC error, and no log line quotes the token.
func TestOAuthRefusals(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	hs, _ := startOAuth(t, as, nil)
	now := time.Now()
	mint := func(tok oauthtest.Token) string {
		if tok.Audience == "" {
			tok.Audience = testResource
		}
		return as.Mint(t, tok)
	}
	const challenge = `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`
	invalid := func(why string) string { return challenge + `, error="invalid_token", error_description="` + why + `"` }
	tests := map[string]struct {
		auth      string // the Authorization header; "" sends none
		status    int
		challenge string
		body      string
	}{
		"no token":       {"", 401, challenge, "send an OAuth access token"},
		"another scheme": {"Basic YWxpY2U6c2VjcmV0", 401, challenge, "send an OAuth access token"},
		"malformed":      {"Bearer abc.def", 401, invalid("not a signed JWT"), "invalid token: not a signed JWT"},
		"oversized":      {"Bearer " + strings.Repeat("a", 16<<10+1), 401, invalid("the token is larger than 16384 bytes"), "larger than"},
		"expired": {"Bearer " + mint(oauthtest.Token{Scope: "mcp:tools", Expiry: now.Add(-2 * time.Minute)}), 401,
			invalid("the token has expired"), "expired"},
		"not yet valid": {"Bearer " + mint(oauthtest.Token{Scope: "mcp:tools", NotBefore: now.Add(5 * time.Minute)}), 401,
			invalid("the token is not valid yet"), "not valid yet"},
		"wrong audience": {"Bearer " + mint(oauthtest.Token{Scope: "mcp:tools", Audience: "https://other.example.com/mcp"}), 401,
			invalid("the token is for another resource (audience)"), "another resource"},
		"wrong issuer": {"Bearer " + mint(oauthtest.Token{Scope: "mcp:tools", Issuer: "https://evil.example.com"}), 401,
			invalid("the issuer is not trusted"), "not trusted"},
		"bad signature": {"Bearer " + mint(oauthtest.Token{Scope: "mcp:tools", Foreign: true}), 401,
			invalid("the signature does not verify"), "signature"},
		"alg none": {"Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJtYWxsb3J5In0.", 401,
			invalid("the signature algorithm is not one of RS256, ES256, EdDSA"), "algorithm"},
		"missing scope": {"Bearer " + mint(oauthtest.Token{Scope: "other"}), 403,
			challenge + `, error="insufficient_scope", error_description="the token lacks the scope mcp:tools"`, "insufficient scope"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := postHeaders("")
			if tc.auth != "" {
				h["Authorization"] = tc.auth
			}
			status, hd, body := hs.roundtrip(req{"POST", "/mcp", h, mcptest.InitMsg("2025-11-25")})
			if status != tc.status {
				t.Errorf("status %d, want %d (%s)", status, tc.status, body)
			}
			if got := hd.Get("WWW-Authenticate"); got != tc.challenge {
				t.Errorf("WWW-Authenticate:\n got %s\nwant %s", got, tc.challenge)
			}
			if !strings.Contains(body, `"error"`) || !strings.Contains(body, tc.body) {
				t.Errorf("body %s does not say %q", body, tc.body)
			}
		})
	}
	t.Cleanup(func() {
		hs.logs.mu.Lock()
		defer hs.logs.mu.Unlock()
		for _, tc := range tests {
			if tok, ok := strings.CutPrefix(tc.auth, "Bearer "); ok && len(tok) > 20 && strings.Contains(hs.logs.b.String(), tok) {
				t.Errorf("the log quotes a token")
			}
		}
	})
}

// TestOAuthMetadata: Protected Resource Metadata is served, without a
// token, at the well-known path of the endpoint and at the bare one.
func TestOAuthMetadata(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	hs, _ := startOAuth(t, as, nil)
	want := `{"resource":"https://mcp.example.com/mcp","authorization_servers":["` + as.URL +
		`"],"scopes_supported":["mcp:tools"],"bearer_methods_supported":["header"]}`
	tests := map[string]struct {
		path   string
		status int
	}{
		"endpoint's": {oauth.WellKnownPrefix + PathMCP, 200},
		"bare":       {oauth.WellKnownPrefix, 200},
		"elsewhere":  {oauth.WellKnownPrefix + "/other", 404},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			status, hd, body := hs.roundtrip(req{"GET", tc.path, map[string]string{"Origin": "https://app.example.com"}, ""})
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if status == 200 && (body != want || hd.Get("Access-Control-Allow-Origin") != "*") {
				t.Errorf("got %s (CORS %q), want %s", body, hd.Get("Access-Control-Allow-Origin"), want)
			}
		})
	}
}

// TestOAuthSessionOwner: a session opened with alice's token refuses
// bob's requests (403), and the static token is accepted beside OAuth.
func TestOAuthSessionOwner(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	hs, _ := startOAuth(t, as, &Options{Token: "static-secret"})
	alice := "Bearer " + as.Mint(t, oauthtest.Token{Audience: testResource, Scope: "mcp:tools", Subject: "alice"})
	bob := "Bearer " + as.Mint(t, oauthtest.Token{Audience: testResource, Scope: "mcp:tools", Subject: "bob"})
	status, hd, body := hs.roundtrip(req{"POST", "/mcp", postHeaders("", "Authorization", alice), mcptest.InitMsg("2025-11-25")})
	if status != 200 {
		t.Fatalf("initialize: %d %s", status, body)
	}
	sid := hd.Get("Mcp-Session-Id")
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	tests := map[string]struct {
		auth   string
		status int
	}{
		"its caller":     {alice, 200},
		"another caller": {bob, 403},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if status, _, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(sid, "Authorization", tc.auth), ping}); status != tc.status {
				t.Errorf("ping: %d %s, want %d", status, body, tc.status)
			}
		})
	}
	if status, _, body := hs.roundtrip(req{"POST", "/mcp", postHeaders("", "Authorization", "Bearer static-secret"), mcptest.InitMsg("2025-11-25")}); status != 200 {
		t.Errorf("the static token: %d %s", status, body)
	}
}

// TestOAuthIssuerUnavailable: while the issuer's keys cannot be fetched,
// a token gets 503 with Retry-After, not a 401 that would send the client
// to log in again.
func TestOAuthIssuerUnavailable(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	hs, _ := startOAuth(t, as, nil)
	as.SetDown(true)
	token := as.Mint(t, oauthtest.Token{Audience: testResource, Scope: "mcp:tools"})
	status, hd, body := hs.roundtrip(req{"POST", "/mcp", postHeaders("", "Authorization", "Bearer "+token), mcptest.InitMsg("2025-11-25")})
	if status != 503 || hd.Get("Retry-After") != "10" || !strings.Contains(body, "authorization server cannot be reached") {
		t.Errorf("got %d (Retry-After %q) %s, want 503", status, hd.Get("Retry-After"), body)
	}
}

// TestOAuthKeyRotatedIn: a token of a key the issuer published after
// plughost last fetched its keys, sooner than it may fetch them again,
// gets 503 with Retry-After (it may well be good), not 401.
func TestOAuthKeyRotatedIn(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	hs, _ := startOAuth(t, as, nil)
	first := as.Mint(t, oauthtest.Token{Audience: testResource, Scope: "mcp:tools"})
	if status, _, body := hs.roundtrip(req{"POST", "/mcp", postHeaders("", "Authorization", "Bearer "+first), mcptest.InitMsg("2025-11-25")}); status != 200 {
		t.Fatalf("first token: %d %s", status, body)
	}
	as.Rotate(t)
	token := as.Mint(t, oauthtest.Token{Audience: testResource, Scope: "mcp:tools"})
	status, hd, body := hs.roundtrip(req{"POST", "/mcp", postHeaders("", "Authorization", "Bearer "+token), mcptest.InitMsg("2025-11-25")})
	retry, err := strconv.Atoi(hd.Get("Retry-After"))
	if status != 503 || err != nil || retry < 1 || retry > 10 || !strings.Contains(body, "not among the issuer's keys as last fetched") {
		t.Errorf("got %d (Retry-After %q) %s, want 503 with Retry-After 1 to 10", status, hd.Get("Retry-After"), body)
	}
}
