package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/oauth/oauthtest"
)

// TestServeMetricsAccess: GET /metrics on the --http listener serves an
// OAuth caller only when an access rule admits the item of kind metrics:
// bob, whom no rule admits, gets 403 and no tool's name; ops reads them
// (issue 31, attack 5).
func TestServeMetricsAccess(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	const resource = "https://mcp.example.com/mcp"
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "plughost.hcl")
	cfg := "auth {\n  issuer = \"" + as.URL + "\"\n  resource = \"" + resource + "\"\n  scopes = [\"mcp:tools\"]\n}\n" +
		"access {\n  rule \"ops read metrics\" {\n    allow = \"item.kind != 'metrics' || caller.subject == 'ops'\"\n  }\n}\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHTTPHostWith(t, []string{"--config", cfgPath}, "echo")
	get := func(subject string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", h.base+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+as.Mint(t, oauthtest.Token{Audience: resource, Scope: "mcp:tools", Subject: subject}))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get("bob"); status != http.StatusForbidden || strings.Contains(body, "plughost_") {
		t.Errorf("bob: %d %.300s, want 403 without metrics", status, body)
	}
	if status, body := get("ops"); status != http.StatusOK || !strings.Contains(body, "plughost_") {
		t.Errorf("ops: %d %.300s, want the metrics", status, body)
	}
}
