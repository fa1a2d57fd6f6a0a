package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/oauth/oauthtest"
)

// accessRules are the rules of the access tests: the two
// examples (only the writers group uses the tool that writes, and never
// with a long text), and a plugin only writers see.
const accessRules = `
access {
  rule "only writers sleep" {
    deny = "item.name == 'sleep' && !(has(caller.claims.groups) && 'writers' in caller.claims.groups)"
  }
  rule "short echoes" {
    deny = "item.name == 'echo' && size(arguments.text) > 10"
  }
  rule "clock is for writers" {
    deny = "item.plugin == 'clock' && !(has(caller.claims.groups) && 'writers' in caller.claims.groups)"
  }
}
`

// accessClient is one identity's session, counting its list_changed.
type accessClient struct {
	cs      *mcp.ClientSession
	changed chan struct{}
}

func (c *accessClient) tools(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// TestAccessRulesPerCaller: two identities (tokens of one issuer, one in
// the writers group) see different tool lists; a hidden tool is unknown to
// the one it is hidden from; a call refused on its arguments gets an
// isError naming the rule; a plugin that only writers see makes only
// their session get list_changed; the plugin learns who calls (subject,
// client, the claims passed on), never the token.
func TestAccessRulesPerCaller(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	const resource = "https://mcp.example.com/mcp"
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "plughost.hcl")
	cfg := "auth {\n  issuer = \"" + as.URL + "\"\n  resource = \"" + resource + "\"\n  pass_claims = [\"groups\"]\n}\n" + accessRules
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	h := startHTTPHostWith(t, []string{"--config", cfgPath, "--audit-log", auditPath}, "echo", "askplugin")

	tokens := map[string]string{
		"alice": as.Mint(t, oauthtest.Token{Audience: resource, Subject: "alice", ClientID: "desk", Claims: map[string]any{"groups": []string{"writers"}, "email": "a@example.com"}}),
		"bob":   as.Mint(t, oauthtest.Token{Audience: resource, Subject: "bob", ClientID: "desk", Claims: map[string]any{"groups": []string{"readers"}}}),
	}
	clients := map[string]*accessClient{}
	for who, token := range tokens {
		hc := h.httpClient(nil)
		hc.Transport = bearer{hc.Transport, token}
		c := &accessClient{changed: make(chan struct{}, 16)}
		c.cs = h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: hc}, c.changed)
		clients[who] = c
	}
	alice, bob := clients["alice"], clients["bob"]

	askTools := []string{"build", "forever", "read_note", "roots", "trace", "twice", "wait_for_user", "whoami"}
	wantAlice := append([]string{"echo", "sleep"}, askTools...)
	slices.Sort(wantAlice)
	wantBob := append([]string{"echo"}, askTools...)
	slices.Sort(wantBob)
	if got := alice.tools(t); !slices.Equal(got, wantAlice) {
		t.Errorf("alice's tools: %v, want %v", got, wantAlice)
	}
	if got := bob.tools(t); !slices.Equal(got, wantBob) {
		t.Errorf("bob's tools: %v, want %v", got, wantBob)
	}
	for _, c := range clients { // what the first load may have said before the lists above
		for len(c.changed) > 0 {
			<-c.changed
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	// sleep is hidden from bob: unknown to him, as a tool that does not exist.
	_, err := bob.cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32602 {
		t.Errorf("bob calling sleep: %v, want -32602", err)
	}
	if res, err := alice.cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1}}); err != nil || res.IsError {
		t.Errorf("alice calling sleep: %v %v", res, err)
	}
	// A long echo is refused, for anyone, naming the caller and the rule.
	res, err := bob.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "far too long a text"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), `tool echo is not allowed for "bob": rule "short echoes" denies it`) {
		t.Errorf("bob's long echo: %v %v", text(res), err)
	}
	if res, err := bob.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "short"}}); err != nil || text(res) != "short" {
		t.Errorf("bob's short echo: %v %v", res, err)
	}

	// The plugin learns who calls, with the claims passed on only.
	res, err = alice.cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatal(err)
	}
	var who struct {
		Subject, ClientID, Issuer string
		Claims                    map[string]any
	}
	if err := json.Unmarshal([]byte(text(res)), &who); err != nil || who.Subject != "alice" || who.ClientID != "desk" || who.Issuer != as.URL ||
		len(who.Claims) != 1 || who.Claims["groups"] == nil {
		t.Errorf("whoami as alice: %s %v; want alice, desk, the issuer and the groups claim alone", text(res), err)
	}
	if strings.Contains(text(res), tokens["alice"]) {
		t.Error("the plugin got the token")
	}

	// A plugin only writers see: alice is told, bob is not. Then one both
	// see: bob's first list_changed is for it (a notification of the
	// first would have come before it, in order).
	copyPlugin(t, "clock", h.pluginDir, "clock")
	await(t, alice.changed, "alice's list_changed for clock")
	if got := alice.tools(t); !slices.Contains(got, "get_current_time") {
		t.Errorf("alice's tools after clock: %v", got)
	}
	copyPlugin(t, "files", h.pluginDir, "files")
	await(t, bob.changed, "bob's list_changed for files")
	got := bob.tools(t)
	if slices.Contains(got, "get_current_time") || !slices.Contains(got, "create_file") {
		t.Errorf("bob's tools after clock and files: %v", got)
	}
	if n := len(bob.changed); n != 0 {
		t.Errorf("bob got %d more list_changed than the one for files", n)
	}
	await(t, alice.changed, "alice's list_changed for files")

	// Unauthenticated requests still get 401.
	resp, err := http.Post(h.base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("no token: %d", resp.StatusCode)
	}
	for _, token := range tokens {
		if strings.Contains(h.stderr.String(), token) {
			t.Error("the log shows a token")
		}
	}
}

// await waits for one value on ch, at most 30 s.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s within 30s", what)
	}
}
