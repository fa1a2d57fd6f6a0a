package oauthclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/oauth/oauthtest"
	"github.com/plughost/plughost/host/oauthclient"
)

// remote is an MCP server of two tools behind a resource server of as:
// whoami needs mcp:tools, admin mcp:admin as well.
func remote(t *testing.T, as *oauthtest.Server) *oauthtest.Resource {
	t.Helper()
	srv := remoteServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	return oauthtest.Protect(t, as, h, []string{"mcp:tools"}, map[string]string{"admin": "mcp:admin"})
}

// remoteServer is the MCP server of remote.
func remoteServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	say := func(text string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		}
	}
	schema := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: schema}, say("a client of mcp:tools"))
	srv.AddTool(&mcp.Tool{Name: "admin", InputSchema: schema}, say("an admin"))
	return srv
}

// connect opens a session to r through hc, as a wrapper does.
func connect(t *testing.T, r *oauthtest.Resource, hc *http.Client) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: r.Endpoint, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func call(cs *mcp.ClientSession, tool string) (string, error) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// Client credentials: the first 401 leads to the authorization server, the
// token is for the resource and its scopes; a tool needing one more scope
// (403 insufficient_scope) is stepped up once, with the union of scopes.
func TestClientCredentials(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	as.AddClient("svc", "svc-secret")
	r := remote(t, as)
	cc := &oauthclient.ClientCredentials{ClientID: "svc", ClientSecret: "svc-secret", Scopes: []string{"extra"}}
	cs, err := connect(t, r, &http.Client{Transport: &oauthclient.Transport{Handler: cc}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := call(cs, "whoami"); err != nil || got != "a client of mcp:tools" {
		t.Fatalf("whoami = %q, %v", got, err)
	}
	if got, err := call(cs, "admin"); err != nil || got != "an admin" {
		t.Fatalf("admin = %q, %v (a step-up)", got, err)
	}
	if got, want := as.Asked(), []string{"mcp:tools extra", "mcp:tools extra mcp:admin"}; !slices.Equal(got, want) {
		t.Errorf("scopes asked %q, want %q", got, want)
	}
	if n := as.TokenRequests("client_credentials"); n != 2 {
		t.Errorf("%d token requests, want 2 (the first, the step-up)", n)
	}
}

// The old HTTP+SSE transport, whose messages go to another URL than its
// endpoint, is authorized by the same Transport, and steps up too.
func TestClientCredentialsSSE(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	as.AddClient("svc", "svc-secret")
	srv := remoteServer()
	r := oauthtest.Protect(t, as, mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil),
		[]string{"mcp:tools"}, map[string]string{"admin": "mcp:admin"})
	cc := &oauthclient.ClientCredentials{ClientID: "svc", ClientSecret: "svc-secret", ServerURL: r.Endpoint}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.SSEClientTransport{Endpoint: r.Endpoint,
		HTTPClient: &http.Client{Transport: &oauthclient.Transport{Handler: cc}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tool := range []string{"whoami", "admin"} {
		if _, err := call(cs, tool); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
	}
	if n := as.TokenRequests("client_credentials"); n != 2 {
		t.Errorf("%d token requests, want 2 (the first, the step-up)", n)
	}
}

// What an operator reads when a grant fails names the cause and holds no
// secret or token.
func TestClientCredentialsFailures(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		secret string
		setup  func(*oauthtest.Server)
		want   string
	}{
		"wrong secret":   {"not-the-secret", func(*oauthtest.Server) {}, "the authorization server refused: invalid_client"},
		"scope refused":  {"svc-secret", func(as *oauthtest.Server) { as.LimitScopes("other") }, "invalid_scope"},
		"server down":    {"svc-secret", func(as *oauthtest.Server) { as.SetDown(true) }, "the metadata of the authorization server"},
		"AS unreachable": {"svc-secret", func(as *oauthtest.Server) { as.Close() }, "connection refused"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			as := oauthtest.New(t)
			as.AddClient("svc", "svc-secret")
			r := remote(t, as)
			c.setup(as)
			cc := &oauthclient.ClientCredentials{ClientID: "svc", ClientSecret: c.secret}
			_, err := connect(t, r, &http.Client{Transport: &oauthclient.Transport{Handler: cc}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), c.secret) {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

// browser is the user: it follows the authorization URL to Login's
// listener.
func browser(t *testing.T) func(string) {
	return func(u string) {
		go func() {
			resp, err := http.Get(u)
			if err != nil {
				t.Errorf("browser: %v", err)
				return
			}
			resp.Body.Close()
		}()
	}
}

// login logs in to r with a client the authorization server registers
// (DCR) and stores the record at path.
func login(t *testing.T, r *oauthtest.Resource, path string, prev *oauthclient.Record) *oauthclient.Record {
	t.Helper()
	rec, err := oauthclient.Login(t.Context(), &oauthclient.LoginOptions{
		Name: "remote", ServerURL: r.Endpoint, Previous: prev, Browse: browser(t),
		Connect: func(ctx context.Context, hc *http.Client) error {
			cs, err := connect(t, r, hc)
			if err == nil {
				cs.Close() // as plughost login does: the login's session ends with it
			}
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Write(path); err != nil {
		t.Fatal(err)
	}
	return rec
}

// A login, then the host's side: the stored token serves, is refreshed
// before it expires (the refresh token grant, with the resource), and the
// new tokens are written back (rotation makes the old refresh token
// useless, so only a written-back one lets the next start in).
func TestLoginThenStoredRefresh(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	r := remote(t, as)
	path := filepath.Join(t.TempDir(), "tokens", "remote", oauthclient.StoreFile)
	as.SetTokenTTL(30 * time.Second) // within RefreshBefore: every use refreshes
	rec := login(t, r, path, nil)
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the record: %v, %v; want mode 0600", st, err)
	}
	if rec.Resource != r.Endpoint || rec.Token.RefreshToken == "" || !slices.Equal(rec.Scopes, []string{"mcp:tools"}) {
		t.Fatalf("record %+v", rec)
	}

	// Each start begins with the record the previous one wrote: with
	// rotation, the login's own refresh token is spent by the first.
	for i := range 2 {
		st := &oauthclient.Stored{Name: "remote", ServerURL: r.Endpoint, Path: path}
		cs, err := connect(t, r, &http.Client{Transport: &oauthclient.Transport{Handler: st}})
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if _, err := call(cs, "whoami"); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		now, err := oauthclient.ReadRecord(path)
		if err != nil {
			t.Fatal(err)
		}
		if now.Token.RefreshToken == rec.Token.RefreshToken || now.Token.AccessToken == rec.Token.AccessToken {
			t.Fatalf("start %d: the refreshed tokens were not written back", i)
		}
		rec = now
	}
	if n := as.TokenRequests("refresh_token"); n < 2 {
		t.Errorf("%d refreshes, want at least 2", n)
	}
}

// A refresh token the authorization server no longer honours: the call
// fails naming invalid_grant and `plughost login`, without a token.
func TestStoredRefreshRefused(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	r := remote(t, as)
	path := filepath.Join(t.TempDir(), oauthclient.StoreFile)
	rec := login(t, r, path, nil)
	as.SetTokenTTL(time.Second)
	as.RevokeRefreshTokens()
	st := &oauthclient.Stored{Name: "remote", ServerURL: r.Endpoint, Path: path,
		Now: func() time.Time { return rec.Token.Expiry.Add(time.Minute) }}
	_, err := connect(t, r, &http.Client{Transport: &oauthclient.Transport{Handler: st}})
	if !errors.Is(err, oauthclient.ErrLoginNeeded) || !strings.Contains(err.Error(), "invalid_grant") ||
		!strings.Contains(err.Error(), "run `plughost login remote`") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), rec.Token.RefreshToken) || strings.Contains(err.Error(), rec.Token.AccessToken) {
		t.Errorf("the error shows a token: %v", err)
	}
}

// A login without the scope a tool needs: the call fails saying to log in
// again, the record keeps what the server wanted, and the next login asks
// for it; the running handler then picks the new record up at once.
func TestStoredStepUpNeedsLogin(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	r := remote(t, as)
	path := filepath.Join(t.TempDir(), oauthclient.StoreFile)
	login(t, r, path, nil)
	st := &oauthclient.Stored{Name: "remote", ServerURL: r.Endpoint, Path: path}
	cs, err := connect(t, r, &http.Client{Transport: &oauthclient.Transport{Handler: st}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = call(cs, "admin")
	if err == nil || !strings.Contains(err.Error(), `the server wants scope "mcp:tools mcp:admin"`) ||
		!strings.Contains(err.Error(), "run `plughost login remote` to grant it") {
		t.Fatalf("admin without the scope: %v", err)
	}
	prev, err := oauthclient.ReadRecord(path)
	if err != nil || !slices.Contains(prev.Wanted, "mcp:admin") {
		t.Fatalf("record after the 403: %+v, %v", prev, err)
	}
	rec := login(t, r, path, prev)
	asked := as.Asked()
	last := strings.Fields(asked[len(asked)-1])
	slices.Sort(last)
	if !slices.Equal(last, []string{"mcp:admin", "mcp:tools"}) || len(rec.Wanted) != 0 {
		t.Fatalf("the second login asked for %q (wanted left %q)", asked[len(asked)-1], rec.Wanted)
	}
	if got, err := call(cs, "admin"); err != nil || got != "an admin" {
		t.Fatalf("admin after the login = %q, %v", got, err)
	}
}

// A record made for another URL is not sent to this one.
func TestStoredOtherServer(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	r := remote(t, as)
	path := filepath.Join(t.TempDir(), oauthclient.StoreFile)
	login(t, r, path, nil)
	st := &oauthclient.Stored{Name: "remote", ServerURL: "http://127.0.0.1:1/elsewhere", Path: path}
	_, err := st.Token()
	if !errors.Is(err, oauthclient.ErrLoginNeeded) || !strings.Contains(err.Error(), "is for "+r.Endpoint+", not http://127.0.0.1:1/elsewhere") {
		t.Fatalf("err = %v", err)
	}
	st = &oauthclient.Stored{Name: "nobody", ServerURL: r.Endpoint, Path: filepath.Join(t.TempDir(), "none.json")}
	if _, err := st.Token(); !errors.Is(err, oauthclient.ErrLoginNeeded) || !strings.Contains(err.Error(), "no login for nobody yet") {
		t.Fatalf("no record: %v", err)
	}
}

// A pre-registered client logs in with its own id and secret, which the
// record does not keep.
func TestLoginPreregistered(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	as.AddClient("plughost-desktop", "desk-secret")
	r := remote(t, as)
	rec, err := oauthclient.Login(t.Context(), &oauthclient.LoginOptions{
		Name: "remote", ServerURL: r.Endpoint, ClientID: "plughost-desktop", ClientSecret: "desk-secret", Browse: browser(t),
		Connect: func(ctx context.Context, hc *http.Client) error { _, err := connect(t, r, hc); return err },
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec.ClientID != "plughost-desktop" || rec.ClientSecret != "" {
		t.Fatalf("record client %q secret %q", rec.ClientID, rec.ClientSecret)
	}
	path := filepath.Join(t.TempDir(), oauthclient.StoreFile)
	if err := rec.Write(path); err != nil {
		t.Fatal(err)
	}
	as.SetTokenTTL(time.Second)
	st := &oauthclient.Stored{Name: "remote", ServerURL: r.Endpoint, Path: path, ClientSecret: "desk-secret",
		Now: func() time.Time { return rec.Token.Expiry.Add(time.Minute) }}
	if _, err := st.Token(); err != nil {
		t.Fatalf("refresh as the pre-registered client: %v", err)
	}
}

// Malformed metadata documents are named in the error: a resource
// metadata that is not JSON, and an authorization server whose metadata
// claims another issuer.
func TestDiscoverMalformed(t *testing.T) {
	t.Parallel()
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+strings.TrimPrefix(r.URL.Path, "/mcp")+`"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	})
	mux.HandleFunc("/garbled", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"resource": [`))
	})
	mux.HandleFunc("/other-issuer", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"resource":"` + base + `/mcp/other-issuer","authorization_servers":["` + base + `/as"]}`))
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server/as", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"issuer":"https://attacker.example","token_endpoint":"` + base + `/token","code_challenge_methods_supported":["S256"]}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	base = srv.URL
	for prm, want := range map[string]string{
		"/garbled":      "no protected resource metadata for " + base + "/mcp/garbled",
		"/other-issuer": `the metadata of the authorization server ` + base + `/as: metadata issuer "https://attacker.example" does not match`,
	} {
		cc := &oauthclient.ClientCredentials{ClientID: "svc", ClientSecret: "s"}
		hc := &http.Client{Transport: &oauthclient.Transport{Handler: cc}}
		resp, err := hc.Get(base + "/mcp" + prm)
		if err == nil {
			resp.Body.Close()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one saying %q", prm, err, want)
		}
	}
}

// An access token the server refuses before its expiry (here: one it
// cannot verify, as after a revocation) is replaced by one forced
// refresh, and the request goes through.
func TestStoredRefreshOn401(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	r := remote(t, as)
	path := filepath.Join(t.TempDir(), oauthclient.StoreFile)
	rec := login(t, r, path, nil)
	rec.Token.AccessToken = "revoked"
	if err := rec.Write(path); err != nil {
		t.Fatal(err)
	}
	st := &oauthclient.Stored{Name: "remote", ServerURL: r.Endpoint, Path: path}
	cs, err := connect(t, r, &http.Client{Transport: &oauthclient.Transport{Handler: st}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := call(cs, "whoami"); err != nil || got != "a client of mcp:tools" {
		t.Fatalf("whoami = %q, %v", got, err)
	}
	now, err := oauthclient.ReadRecord(path)
	if err != nil || now.Token.AccessToken == rec.Token.AccessToken || as.TokenRequests("refresh_token") != 1 {
		t.Fatalf("after the 401: %d refreshes, record %v", as.TokenRequests("refresh_token"), err)
	}
}

// A login the authorization server refuses (here: a client it does not
// know) ends with its error, and no record.
func TestLoginRefused(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	r := remote(t, as)
	rec, err := oauthclient.Login(t.Context(), &oauthclient.LoginOptions{
		Name: "remote", ServerURL: r.Endpoint, ClientID: "nobody-registered-me", Browse: browser(t),
		Connect: func(ctx context.Context, hc *http.Client) error { _, err := connect(t, r, hc); return err },
	})
	if err == nil || !strings.Contains(err.Error(), "the authorization server refused the login: unauthorized_client") || rec != nil {
		t.Fatalf("Login = %+v, %v", rec, err)
	}
}
