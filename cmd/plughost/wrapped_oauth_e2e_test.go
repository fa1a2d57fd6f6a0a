package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/oauth/oauthtest"
	"github.com/plughost/plughost/host/oauthclient"
)

// oauthRemote is a remote MCP server of two tools behind a resource server
// of as (a host/oauth Verifier of its tokens): whoami needs mcp:tools,
// admin mcp:admin as well.
func oauthRemote(t *testing.T, as *oauthtest.Server) *oauthtest.Resource {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	say := func(text string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		}
	}
	schema := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "whoami", Description: "who the token says", InputSchema: schema}, say("a client of mcp:tools"))
	srv.AddTool(&mcp.Tool{Name: "admin", Description: "needs mcp:admin", InputSchema: schema}, say("an admin"))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	return oauthtest.Protect(t, as, h, []string{"mcp:tools"}, map[string]string{"admin": "mcp:admin"})
}

// callResult calls name and returns its text and whether it is an isError.
func (c *wrappedClient) callResult(t *testing.T, name string) (string, bool) {
	t.Helper()
	res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return text(res), res.IsError
}

// A wrapped remote server reached with client credentials: the secret's
// file must be granted; the token is asked for at the server's first 401,
// asked for again before it expires, stepped up for a tool that needs one
// more scope; a refused grant answers the call with an isError naming the
// cause, and the host serves on.
func TestWrappedRemoteClientCredentials(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	as.AddClient("svc", "svc-secret")
	r := oauthRemote(t, as)
	secretFile := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(secretFile, []byte("svc-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	declare(t, dir, "remote", map[string]any{"url": r.Endpoint,
		"oauth": map[string]any{"grant": "client_credentials", "client_id": "svc", "client_secret_file": secretFile}})

	refused := serveWrappedStdio(t, dir, "")
	refused.stderr.await(t, "oauth: client_secret_file "+secretFile+": the operator grants it to this server with allow_read")
	refused.cs.Close()

	config := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(config, []byte("sandbox {\n  plugin \"remote\" {\n    allow_read = [\""+secretFile+"\"]\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	as.SetTokenTTL(30 * time.Second) // within oauthclient.RefreshBefore: each request asks anew
	c := serveWrappedStdio(t, dir, config)
	c.awaitTool(t, "whoami")
	if got := c.call(t, "whoami", nil); got != "a client of mcp:tools" {
		t.Errorf("whoami = %q", got)
	}
	before := as.TokenRequests("client_credentials")
	if got := c.call(t, "admin", nil); got != "an admin" {
		t.Errorf("admin (a step-up) = %q", got)
	}
	if asked := as.Asked(); !strings.Contains(asked[len(asked)-1], "mcp:admin") || !strings.Contains(asked[len(asked)-1], "mcp:tools") {
		t.Errorf("the step-up asked for %q, want mcp:tools and mcp:admin", asked[len(asked)-1])
	}
	if after := as.TokenRequests("client_credentials"); after <= before {
		t.Errorf("no new token was asked for before expiry or for the step-up (%d, then %d)", before, after)
	}

	as.RefuseTokens("invalid_client")
	got, isErr := c.callResult(t, "whoami")
	if !isErr || !strings.Contains(got, "the authorization server refused: invalid_client") || strings.Contains(got, "svc-secret") {
		t.Errorf("whoami with the grant refused = %q (isError %v), want an isError naming invalid_client", got, isErr)
	}
	as.RefuseTokens("")
	if got := c.call(t, "whoami", nil); got != "a client of mcp:tools" {
		t.Errorf("whoami once the grant is back = %q", got)
	}
	if strings.Contains(c.stderr.String(), "svc-secret") {
		t.Error("the log shows the client secret")
	}
}

// authURL is the URL `plughost login` prints.
var authURL = regexp.MustCompile(`(?m)^  (http://127\.0\.0\.1:\d+/authorize\?\S+)$`)

// plughostLogin runs `plughost login remote` with env, acting as the
// user's browser: it opens the URL printed, which the authorization server
// redirects to the login's loopback listener. It returns the command's
// stdout.
func plughostLogin(t *testing.T, dir string, env ...string) string {
	t.Helper()
	cmd := exec.Command(bin.plughost, "login", "remote", "--plugins", dir, "--no-browser")
	cmd.Env = append(os.Environ(), env...)
	stderr, stdout := newLineBuffer(), newLineBuffer()
	cmd.Stderr, cmd.Stdout = stderr, stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stderr.await(t, "open this URL in a browser")
	m := authURL.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no authorization URL printed:\n%s", stderr)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/callback" {
		t.Fatalf("the browser ended at %s with %d", resp.Request.URL, resp.StatusCode)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("plughost login: %v\n%s", err, stderr)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("plughost login did not end:\n%s", stderr)
	}
	return stdout.String()
}

// An interactive login once: before it the server cannot load, and says
// to log in; `plughost login remote` (the test as the browser) stores the
// tokens, 0600; the host uses them, refreshes them before expiry and
// writes them back; a tool needing a wider scope answers with an isError
// saying to log in again, and the next login asks for that scope, which
// the running host picks up without a restart; a refresh token the
// authorization server no longer honours is an isError naming the cause.
func TestWrappedRemoteLogin(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	r := oauthRemote(t, as)
	dir := t.TempDir()
	declare(t, dir, "remote", map[string]any{"url": r.Endpoint, "oauth": map[string]any{}})
	state := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state, "XDG_DATA_HOME=" + t.TempDir()}

	before := serveWrappedStdio(t, dir, "", env...)
	before.stderr.await(t, "no login for remote yet: run `plughost login remote`")
	before.cs.Close()

	as.SetTokenTTL(30 * time.Second) // within oauthclient.RefreshBefore: each use refreshes
	out := plughostLogin(t, dir, env...)
	store := filepath.Join(state, "plughost", "tokens", "remote", oauthclient.StoreFile)
	if !strings.Contains(out, "logged in to remote ("+r.Endpoint+"): 2 tools; scopes mcp:tools; tokens stored in "+store) {
		t.Errorf("plughost login said %q", out)
	}
	st, err := os.Stat(store)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the stored login: %v, %v; want mode 0600", st, err)
	}
	login, err := oauthclient.ReadRecord(store)
	if err != nil {
		t.Fatal(err)
	}

	c := serveWrappedStdio(t, dir, "", env...)
	c.awaitTool(t, "whoami")
	if got := c.call(t, "whoami", nil); got != "a client of mcp:tools" {
		t.Errorf("whoami = %q", got)
	}
	now, err := oauthclient.ReadRecord(store)
	if err != nil {
		t.Fatal(err)
	}
	if as.TokenRequests("refresh_token") == 0 || now.Token.RefreshToken == login.Token.RefreshToken {
		t.Errorf("%d refreshes; the stored refresh token changed: %v", as.TokenRequests("refresh_token"), now.Token.RefreshToken != login.Token.RefreshToken)
	}

	got, isErr := c.callResult(t, "admin")
	if !isErr || !strings.Contains(got, `the server wants scope "mcp:tools mcp:admin"`) || !strings.Contains(got, "run `plughost login remote` to grant it") {
		t.Fatalf("admin without the scope = %q (isError %v)", got, isErr)
	}
	if got := c.call(t, "whoami", nil); got != "a client of mcp:tools" {
		t.Errorf("whoami after the refused step-up = %q", got)
	}
	out = plughostLogin(t, dir, env...)
	if !strings.Contains(out, "mcp:admin") {
		t.Errorf("the second login did not ask for mcp:admin: %q", out)
	}
	if got := c.call(t, "admin", nil); got != "an admin" {
		t.Errorf("admin after the second login = %q", got)
	}
	as.RevokeRefreshTokens()
	got, isErr = c.callResult(t, "whoami")
	if !isErr || !strings.Contains(got, "invalid_grant") || !strings.Contains(got, "run `plughost login remote`") {
		t.Errorf("whoami with the refresh token revoked = %q (isError %v)", got, isErr)
	}
	final, err := oauthclient.ReadRecord(store)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{final.Token.AccessToken, final.Token.RefreshToken, login.Token.RefreshToken} {
		if strings.Contains(c.stderr.String(), secret) || strings.Contains(got, secret) {
			t.Error("a token reached the log or a result")
		}
	}
}
