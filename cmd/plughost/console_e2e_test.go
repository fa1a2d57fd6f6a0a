package main

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/trust"
)

// The console's browser test (issue 37's proof) runs a real browser:
// Debian's Chromium, driven by Playwright's driver (playwright-core,
// pinned in internal/browsertest/package.json; it downloads no browser)
// from testdata/console.mjs, on the Node 22 of conformance/node_modules.
var (
	chromiumBin      = "/usr/bin/chromium"
	playwrightModule = filepath.Join("..", "..", "internal", "browsertest", "node_modules", "playwright-core", "package.json")
	consoleScript    = filepath.Join("testdata", "console.mjs")
	hostileScript    = filepath.Join("testdata", "console-hostile-server.cjs")
)

// consoleAccessRules are the browser test's rules: every caller sees the
// console, only the ops group approves (alice is in it, bob is not).
const consoleAccessRules = `
access {
  rule "only ops approve" {
    allow = "item.kind != 'approve' || 'ops' in caller.claims.groups"
  }
}
`

// hostileDescription is testdata/console-hostile-server.cjs's tool
// description, which its page must show as this very text.
const hostileDescription = `Says hello. <script>alert("script")</script>"><img src=x onerror=alert("img") data-injected=1>` +
	`<a href="javascript:alert(1)">click</a> ` + "\u202E" + `evil`

// consoleScriptInput is what testdata/console.mjs is given (its argument,
// as JSON).
type consoleScriptInput struct {
	Playwright  string `json:"playwright"`  // playwright-core's package.json, to require it from
	Chromium    string `json:"chromium"`    // the browser
	Screenshots string `json:"screenshots"` // where the screenshots go
	Console     string `json:"console"`     // the console's origin, http://127.0.0.1:PORT
	Issuer      string `json:"issuer"`      // the authorization server people sign in at
	Attacker    string `json:"attacker"`    // a page of another origin that posts a form to the console

	Quarantined scenePlugin `json:"quarantined"` // never approved: approved in the browser
	Held        scenePlugin `json:"held"`        // its tool changed: the diff shows Added
	Hostile     scenePlugin `json:"hostile"`     // its tool's description is markup, Description
}

// scenePlugin is one plugin of the browser's scene: its name and the tool
// the script looks for on its page.
type scenePlugin struct {
	Name string `json:"name"`
	Tool string `json:"tool"`
	// Added is a text the tool's changed description added (held), shown
	// as added in the diff; Description the tool's whole description
	// (hostile), shown as this very text.
	Added       string `json:"added,omitempty"`
	Description string `json:"description,omitempty"`
}

// TestConsoleInABrowser is issue 37's proof, in a real browser: serve
// --http with an auth block and the console signing people in through
// oidc-provider, trust mode pinned, a plugin never approved (quarantined),
// an approved one whose tool's description changed (held, with a word
// diff), and a declared server whose tool description is markup. alice
// (ops) signs in through the provider's own login page, sees the
// quarantined plugin, approves it and watches it start and its tools
// appear without a reload (Server-Sent Events), reads the held diff and
// approves it; the hostile description is text (no dialog, no element of
// it); bob (readers) sees the console but no approve button, and his
// forged POST gets 403; a page of another origin posting the approve form
// with alice's cookie and even her CSRF token is refused and changes
// nothing. Screenshots of every step are kept in the test's artifact
// directory (go test -artifacts; make test keeps them in
// bin/test-artifacts). Costs about 33 s (49 s under -race, measured on
// the merged issue 37 branches), 20 s of it the browser's 21 steps, the
// rest the provider, plughost approve twice and the host's start.
func TestConsoleInABrowser(t *testing.T) {
	t.Parallel()
	for _, need := range []struct{ path, install string }{
		{chromiumBin, "Debian's Chromium: apt-get install chromium (.ci/run does)"},
		{playwrightModule, "Playwright's driver: npm ci in internal/browsertest (make test and .ci/run do)"},
		{nodeBin, "Node 22: npm ci in conformance (make test and .ci/run do)"},
	} {
		if _, err := os.Stat(need.path); err != nil {
			t.Fatalf("%v\nthe console's browser test needs %s", err, need.install)
		}
	}
	op := startOIDCProvider(t)
	node, err := filepath.EvalSymlinks(nodeBin)
	if err == nil {
		node, err = filepath.Abs(node)
	}
	if err != nil {
		t.Fatal(err)
	}
	modules, err := filepath.Abs(filepath.Join("..", "..", "conformance", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	realModules, err := filepath.EvalSymlinks(modules) // node resolves packages by their real path
	if err != nil {
		t.Fatal(err)
	}
	hostile, err := filepath.Abs(hostileScript)
	if err != nil {
		t.Fatal(err)
	}

	// The plugins: fresh (the echo plugin, never approved), rug (approved
	// with its definitions pinned; its tool add changes below) and hostile.
	dir, state := t.TempDir(), t.TempDir()
	copyPlugin(t, "echo", dir, "fresh")
	copyPlugin(t, "rugplugin", dir, "rug")
	declare(t, dir, "hostile", map[string]any{"command": node, "args": []string{hostile}, "env": map[string]string{"NODE_PATH": modules}})
	config := filepath.Join(state, "plughost.hcl")
	hcl := op.AuthBlock(oidcResource, "mcp:tools") + consoleAccessRules +
		"console {\n  client_id = " + strconv.Quote(oidcConsoleClient) + "\n}\n" +
		"trust {\n  mode = \"pinned\"\n  file = \"trust.json\"\n}\n" +
		"sandbox {\n  plugin \"hostile\" {\n    allow_read = [" + strconv.Quote(modules) + ", " + strconv.Quote(realModules) + ", " +
		strconv.Quote(filepath.Dir(hostile)) + "]\n  }\n}\n"
	if err := os.WriteFile(config, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"rug", "hostile"} {
		if out, code := plughostCmd(t, "approve", p, "--plugins", dir, "--config", config); code != 0 {
			t.Fatalf("plughost approve %s (exit %d):\n%s", p, code, out)
		}
	}
	audit := filepath.Join(state, "audit.jsonl")
	// The later --plugins wins over startHTTPHostWith's own (empty) one.
	h := startHTTPHostWith(t, []string{"--config", config, "--audit-log", audit, "--plugins", dir})
	h.pluginDir = dir // stop's check that no plugin process outlives the host

	// rug's tool add changes its description (rugplugin does on a call of
	// its tool rug): held until approved.
	callWithToken(t, h, op.Token(t, oidcAlice, oidcResource, "mcp:tools"), "rug")
	h.stderr.await(t, "definition held back: changed since it was approved")

	in := consoleScriptInput{Chromium: chromiumBin, Screenshots: t.ArtifactDir(), Console: h.base, Issuer: op.Issuer(),
		Attacker: forgingPage(t)}
	in.Quarantined.Name, in.Quarantined.Tool = "fresh", "echo"
	in.Held.Name, in.Held.Tool, in.Held.Added = "rug", "add", rugPulled[len(rugApproved)+1:]
	in.Hostile.Name, in.Hostile.Tool, in.Hostile.Description = "hostile", "greet", hostileDescription
	if in.Playwright, err = filepath.Abs(playwrightModule); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots: %s", in.Screenshots)
	arg, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(consoleScript)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // a bound on a hung browser, never reached
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, script, string(arg))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the browser's scene failed (%v); screenshots in %s:\n%s", err, in.Screenshots, out.String())
	}
	if !strings.HasSuffix(out.String(), "ok\n") {
		t.Fatalf("the browser's scene did not finish:\n%s", out.String())
	}
	t.Logf("the browser's scene:\n%s", out.String())

	// What the host recorded: alice's approvals (by her name), none of
	// bob's or the forged requests'.
	f, err := trust.ReadFile(filepath.Join(state, "trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := f.Plugins["fresh"]; !ok || !strings.Contains(e.ApprovedBy, "alice") {
		t.Errorf("fresh's approval in the trust file: %+v, want one by alice", e)
	}
	var add struct{ Description string }
	if p := f.Plugins["rug"].Definitions["tool/add"]; json.Unmarshal(p.Definition, &add) != nil || add.Description != rugPulled {
		t.Errorf("rug's pinned tool add: %q, want the changed description approved", add.Description)
	}
	lines, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	approvals := map[string]string{} // plugin → by, from the audit log's approve lines
	for line := range strings.Lines(string(lines)) {
		var l struct{ Event, Plugin, By string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Event == "approve" {
			if prev, ok := approvals[l.Plugin]; ok {
				t.Errorf("%s approved twice (by %q, then %q): a refused request went through", l.Plugin, prev, l.By)
			}
			approvals[l.Plugin] = l.By
		}
	}
	for _, p := range []string{"fresh", "rug"} {
		if !strings.Contains(approvals[p], "alice") {
			t.Errorf("the audit log's approval of %s names %q, want alice", p, approvals[p])
		}
	}
}

// callWithToken calls tool (without arguments) over Streamable HTTP with
// token, and fails the test unless the call works.
func callWithToken(t *testing.T, h *httpHost, token, tool string) {
	t.Helper()
	hc := h.httpClient(nil)
	hc.Transport = bearer{hc.Transport, token}
	cs := h.connect(&mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: hc}, nil)
	defer cs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool}); err != nil || res.IsError {
		t.Fatalf("%s with the token: %v %v", tool, res, err)
	}
}

// forgingPage serves, on 127.0.0.1 at a port of its own (another origin
// than the console's, the same site, so a SameSite=Strict cookie still
// goes along), a page that posts a form to the URL of its query's
// "action" with the query's plugin, digest and csrf as soon as it loads:
// a cross-site request forgery. It returns the page's URL.
func forgingPage(t *testing.T) string {
	t.Helper()
	page := template.Must(template.New("forge").Parse(`<!doctype html>
<title>a page of another origin</title>
<form id="f" method="POST" action="{{.action}}">
<input type="hidden" name="plugin" value="{{.plugin}}">
<input type="hidden" name="digest" value="{{.digest}}">
<input type="hidden" name="csrf" value="{{.csrf}}">
</form>
<script>document.getElementById("f").submit()</script>
`))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page.Execute(w, map[string]string{"action": q.Get("action"), "plugin": q.Get("plugin"), "digest": q.Get("digest"), "csrf": q.Get("csrf")})
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String() + "/forge"
}
