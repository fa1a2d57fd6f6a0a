package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// loginLink finds the console's login link in a host's log.
var loginLink = regexp.MustCompile(`login_link=(http://127\.0\.0\.1:\d+/console/login\?key=[A-Za-z0-9_-]{43})\b`)

// TestConsoleListenLoginLink: a stdio host under a desktop client with
// --console-listen 127.0.0.1:0 prints the console's login link in its log;
// a browser (here a client with a cookie jar) that opens it is signed in
// and lands on the plugins page, which lists the plugin the host runs,
// while the MCP session over stdio goes on. Fails without the flag's
// wiring (no link is printed). Cost: one host start with one plugin
// (about a second).
func TestConsoleListenLoginLink(t *testing.T) {
	t.Parallel()
	h := startTestHostWith(t, []string{"--console-listen", "127.0.0.1:0"}, "echo")
	h.stderr.await(t, "login_link=")
	h.awaitTools("echo", "sleep")
	h.call("echo", map[string]any{"text": "hi"})
	browser, base := signInWithTheLink(t, h.stderr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if names := h.toolNames(ctx); !slices.Contains(names, "echo") {
		t.Errorf("the stdio session's tools after the console served: %v", names)
	}
	// A stdio host keeps the metrics for its console: the call shows.
	resp, err := browser.Get(base + "/console/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), `data-tool="echo"`) {
		t.Errorf("the calls page shows no call of echo:\n%s", b)
	}
}

// TestConsoleOnHTTP: serve --http with a token serves the console at
// /console of the same listener without the bearer token (a browser
// signs in with the login link printed for a loopback listener), while
// /mcp still wants the token. Cost: one host start with one plugin.
func TestConsoleOnHTTP(t *testing.T) {
	t.Parallel()
	h := startHTTPHostWith(t, []string{"--token", "s3cret"}, "echo")
	h.stderr.await(t, "login_link=")
	h.stderr.await(t, "plugin loaded: plugin=echo")
	signInWithTheLink(t, h.stderr)
	resp, err := http.Post(h.base+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /mcp without the token: %d, want 401", resp.StatusCode)
	}
	if strings.Contains(h.stderr.String(), "s3cret") {
		t.Error("the static token is in the log")
	}
}

// signInWithTheLink opens the login link of log in a fresh browser: before
// it the plugins page sends to the login page; the link lands on the
// plugins page, signed in, listing the echo plugin, with the console's
// Content-Security-Policy. It returns the signed-in browser and the
// console's base URL.
func signInWithTheLink(t *testing.T, log *lineBuffer) (browser *http.Client, base string) {
	t.Helper()
	m := loginLink.FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no login link of a loopback address in the log:\n%s", log)
	}
	link := m[1]
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser = &http.Client{Jar: jar, Timeout: 30 * time.Second}
	get := func(url string) (*http.Response, string) {
		t.Helper()
		resp, err := browser.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	keyless, _, _ := strings.Cut(link, "?")
	if resp, _ := get(strings.Replace(keyless, "/login", "/plugins", 1)); resp.Request.URL.Path != "/console/login" {
		t.Errorf("the plugins page without signing in ended at %s (%d), want the login page", resp.Request.URL, resp.StatusCode)
	}
	resp, body := get(link)
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/console/plugins" {
		t.Fatalf("the login link ended at %s with %d, want the plugins page:\n%s", resp.Request.URL, resp.StatusCode, body)
	}
	if !strings.Contains(body, `data-plugin="echo"`) || !strings.Contains(body, `data-testid="whoami"`) {
		t.Errorf("the plugins page lists no echo row or no signed-in user:\n%s", body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("the page's Content-Security-Policy is %q", csp)
	}
	return browser, strings.TrimSuffix(keyless, "/console/login")
}
