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

	"github.com/plughost/plughost/host/oauth/oauthtest"
)

// TestServeOAuth: with an auth block, serve --http is an OAuth resource
// server: a client without a token gets 401 naming the Protected Resource
// Metadata, which names the authorization server; an opaque token passes
// through introspection; the go-sdk client with a JWT from it calls a
// tool; the audit line names the caller; the log never shows a token.
func TestServeOAuth(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	const resource = "https://mcp.example.com/mcp"
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "plughost.hcl")
	cfg := "auth {\n  issuer = \"" + as.URL + "\"\n  resource = \"" + resource + "\"\n  scopes = [\"mcp:tools\"]\n" +
		"  introspection_endpoint = \"" + as.URL + "/introspect\"\n  client_id = \"" + oauthtest.ClientID + "\"\n  client_secret_file = \"rs.secret\"\n}\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rs.secret"), []byte(oauthtest.ClientSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	h := startHTTPHostWith(t, []string{"--config", cfgPath, "--audit-log", auditPath}, "echo")

	resp, err := http.Post(h.base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("no token: %d %q, want 401 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}
	resp, err = http.Get(h.base + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	prm, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.Contains(string(prm), `"authorization_servers":["`+as.URL+`"]`) {
		t.Errorf("metadata: %d %s %v", resp.StatusCode, prm, err)
	}

	// An opaque token, checked at the introspection endpoint.
	opaque := as.Opaque(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools", Subject: "bob"})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, err := http.NewRequest("POST", h.base+"/mcp", strings.NewReader(init))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+opaque)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("initialize with an opaque token: %d, want 200", resp.StatusCode)
	}

	token := as.Mint(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools", Subject: "alice", ClientID: "e2e", ID: "jti-1"})
	hc := h.httpClient(nil)
	hc.Transport = bearer{hc.Transport, token}
	cs := h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: hc}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil || res.IsError {
		t.Fatalf("echo: %v %v", res, err)
	}
	cs.Close()
	h.stop()
	b, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"caller":{"sub":"alice","client":"e2e"}`) {
		t.Errorf("audit log without the caller:\n%s", b)
	}
	if strings.Contains(h.stderr.String(), token) || strings.Contains(h.stderr.String(), opaque) {
		t.Error("the log shows a token")
	}
}
