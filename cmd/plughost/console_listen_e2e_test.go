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

// TestConsoleListenLoginLink: a stdio host under a desktop client with
// --console-listen 127.0.0.1:0 prints the console's login link in its log;
// a browser (here a client with a cookie jar) that opens it is signed in
// and lands on the plugins page, which lists the plugin the host runs,
// while the MCP session over stdio goes on. The same link without its key
// signs no one in. Cost: one host start with one plugin (about a second).
func TestConsoleListenLoginLink(t *testing.T) {
	t.Parallel()
	h := startTestHostWith(t, []string{"--console-listen", "127.0.0.1:0"}, "echo")
	h.stderr.await(t, "login_link=")
	m := regexp.MustCompile(`login_link=(http://127\.0\.0\.1:\d+/console/login\?key=[A-Za-z0-9_-]{43})\b`).FindStringSubmatch(h.stderr.String())
	if m == nil {
		t.Fatalf("no login link of a loopback address in the log:\n%s", h.stderr)
	}
	link := m[1]
	h.awaitTools("echo", "sleep")
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second}
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if names := h.toolNames(ctx); !slices.Contains(names, "echo") {
		t.Errorf("the stdio session's tools after the console served: %v", names)
	}
}
