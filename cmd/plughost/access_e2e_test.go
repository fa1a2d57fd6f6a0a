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

// TestAccessRulesPerCaller: two identities (tokens from a real
// authorization server, oidc-provider: alice in the writers group, bob
// not) see different tool lists; a hidden tool is unknown to
// the one it is hidden from; a call refused on its arguments gets an
// isError naming the rule; a plugin that only writers see makes only
// their session get list_changed; the plugin learns who calls (subject,
// client, the claims passed on), never the token.
func TestAccessRulesPerCaller(t *testing.T) {
	t.Parallel()
	as := startOIDCProvider(t)
	const resource = "https://mcp.example.com/mcp"
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "plughost.hcl")
	auth := strings.TrimSuffix(as.AuthBlock(resource, "mcp:tools"), "}\n") + "  pass_claims = [\"groups\"]\n}\n"
	cfg := auth + accessRules
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	// The host starts with no plugin, so that every list_changed a client
	// hears is for a plugin this test adds after the client connected:
	// each plugin's load is one burst, one list_changed per session that
	// sees it. (Plugins loaded at start would notify sessions connected
	// before their burst ended, and only those: an unknowable count.)
	h := startHTTPHostWith(t, []string{"--config", cfgPath, "--audit-log", auditPath})

	tokens := map[string]string{
		oidcAlice: as.Token(t, oidcAlice, resource, "mcp:tools"), // groups writers, readers
		oidcBob:   as.Token(t, oidcBob, resource, "mcp:tools"),   // groups readers
	}
	clients := map[string]*accessClient{}
	for who, token := range tokens {
		hc := h.httpClient(nil)
		hc.Transport = bearer{hc.Transport, token}
		c := &accessClient{changed: make(chan struct{}, 16)}
		c.cs = h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: hc}, c.changed)
		clients[who] = c
	}
	alice, bob := clients[oidcAlice], clients[oidcBob]
	for _, p := range []string{"echo", "askplugin"} {
		copyPlugin(t, p, h.pluginDir, p)
		await(t, alice.changed, "alice's list_changed for "+p)
		await(t, bob.changed, "bob's list_changed for "+p)
	}

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
	if err := json.Unmarshal([]byte(text(res)), &who); err != nil || who.Subject != oidcAlice || who.ClientID != oidcAlice || who.Issuer != as.Issuer() ||
		len(who.Claims) != 1 || who.Claims["groups"] == nil {
		t.Errorf("whoami as alice: %s %v; want alice, her client, the issuer and the groups claim alone", text(res), err)
	}
	if strings.Contains(text(res), tokens[oidcAlice]) {
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

// TestAccessRulesInSearchMode: over stdio (the caller is the local user)
// with tool search on, what the rules hide stays hidden: a pinned tool is
// not listed, search_tools does not find it, call_tool cannot reach it,
// and the resources list (the catalog's, beside tool search's tools) and
// reads leave out a hidden resource.
func TestAccessRulesInSearchMode(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, `search {
  pinned = ["echo", "get_current_time"]
}
access {
  rule "no clock here" {
    deny = "item.plugin == 'clock' && caller.local"
  }
  rule "secrets stay" {
    deny = "item.kind == 'resource' && item.name == 'secret.txt'"
  }
}
`)
	h := startTestHostWith(t, []string{"--config", cfg}, "echo", "clock", "files")
	awaitToolsOf(t, h.session, h.listChanged, "call_tool", "echo", "search_tools")
	if res := h.call("search_tools", map[string]any{"query": "what is the current date and time"}); strings.Contains(text(res), "get_current_time") {
		t.Errorf("search_tools found a hidden tool: %s", text(res))
	}
	if res := h.call("call_tool", map[string]any{"name": "get_current_time"}); !res.IsError || !strings.Contains(text(res), `no tool is named "get_current_time"`) {
		t.Errorf("call_tool of a hidden tool: %v %s", res.IsError, text(res))
	}

	for _, name := range []string{"secret.txt", "open.txt"} { // in this order: a scan that finds open.txt finds both
		if res := h.call("call_tool", map[string]any{"name": "create_file", "arguments": map[string]any{"filename": name, "content": "x"}}); res.IsError {
			t.Fatalf("create_file %s: %s", name, text(res))
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var uris []string
	for !slices.ContainsFunc(uris, func(u string) bool { return strings.HasSuffix(u, "/open.txt") }) {
		// The files plugin rescans its workspace on its own schedule: no
		// event reaches the client for a list it may not see changing.
		select {
		case <-ctx.Done():
			t.Fatalf("open.txt never listed: %v", uris)
		case <-time.After(50 * time.Millisecond):
		}
		res, err := h.session.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		uris = uris[:0]
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
	}
	secret := strings.TrimSuffix(uris[slices.IndexFunc(uris, func(u string) bool { return strings.HasSuffix(u, "/open.txt") })], "open.txt") + "secret.txt"
	if slices.Contains(uris, secret) {
		t.Errorf("resources/list shows a hidden resource: %v", uris)
	}
	_, err := h.session.ReadResource(ctx, &mcp.ReadResourceParams{URI: secret})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32002 {
		t.Errorf("reading a hidden resource: %v, want -32002", err)
	}
}
