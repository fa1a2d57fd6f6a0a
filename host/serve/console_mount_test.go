package serve

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/access"
	"github.com/plughost/plughost/host/console"
)

// TestListenConsoleRefuses: --console-listen is refused, before any
// plugin starts, beyond loopback and when the console block turns the
// console off, each with what to do instead; a loopback address listens.
func TestListenConsoleRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr     string
		set      consoleSettings
		want     string
		listened bool
	}{
		{addr: "0.0.0.0:0", want: "--console-listen 0.0.0.0:0: not a loopback address"},
		{addr: "192.0.2.1:8765", want: "serve --http, where it is at /console"},
		{addr: "127.0.0.1:0", set: consoleSettings{disabled: true}, want: "console block says enabled = false"},
		{addr: "127.0.0.1:0", listened: true},
	} {
		ln, err := listenConsole(c.addr, &c.set)
		if ln != nil {
			ln.Close()
		}
		if c.listened {
			if err != nil {
				t.Errorf("%s: %v, want it to listen", c.addr, err)
			}
			continue
		}
		if !errors.Is(err, ErrConsoleListen) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want ErrConsoleListen saying %q", c.addr, c.set, err, c.want)
		}
	}
}

// TestConsoleAllowedAsksTheRulesInForce: the console asks the access
// rules the host holds now, for the kinds console and approve (with the
// plugin), so a reload's rules apply at once; other kinds are refused.
func TestConsoleAllowedAsksTheRulesInForce(t *testing.T) {
	t.Parallel()
	h := &Host{}
	alice := &console.Caller{Subject: "alice", Claims: map[string]any{"groups": []any{"ops"}}}
	bob := &console.Caller{Subject: "bob", Claims: map[string]any{"groups": []any{"readers"}}}
	if h.consoleAllowed(alice, access.ItemConsole, "") {
		t.Error("without rules alice sees the console; want no OAuth caller to")
	}
	rules, err := access.Compile([]access.Source{{Name: "ops approve", Expr: "item.kind != 'approve' || 'ops' in caller.claims.groups"}})
	if err != nil {
		t.Fatal(err)
	}
	h.access.Store(rules)
	for _, c := range []struct {
		who          *console.Caller
		kind, plugin string
		want         bool
	}{
		{alice, "console", "", true}, {bob, "console", "", true},
		{alice, "approve", "files", true}, {bob, "approve", "files", false},
		{alice, "metrics", "", false}, {alice, "tool", "", false},
	} {
		if got := h.consoleAllowed(c.who, c.kind, c.plugin); got != c.want {
			t.Errorf("%s may %s %q: %v, want %v", c.who.Subject, c.kind, c.plugin, got, c.want)
		}
	}
}

// TestConsoleSignInSettings: people signing in through an authorization
// server beyond loopback need public_url (else the redirect URI would be
// made from a Host nothing checks); behind a TLS proxy (public_url
// https) the session cookie is Secure and __Host- prefixed.
func TestConsoleSignInSettings(t *testing.T) {
	t.Parallel()
	var logBuf bytes.Buffer
	h := &Host{log: hclog.New(&hclog.LoggerOptions{Output: &logBuf, Level: hclog.Info})}
	verify := func(context.Context, string) (*console.Caller, time.Time, error) {
		return nil, time.Time{}, errors.New("unused")
	}
	s := &consoleSettings{oauth: &console.OAuthLogin{Issuer: "https://auth.example.com", ClientID: "plughost-console", Verify: verify}}
	_, err := h.newConsole(s, consoleListener{base: "http://192.0.2.1:8080"})
	if err == nil || !strings.Contains(err.Error(), "set its public_url") {
		t.Errorf("OAuth sign-in beyond loopback without public_url: %v, want a refusal naming public_url", err)
	}
	c, err := h.newConsole(s, consoleListener{base: "http://127.0.0.1:8080", loopback: true, publicURL: "https://mcp.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	link := regexp.MustCompile(`login_link=(\S+)`).FindStringSubmatch(logBuf.String())
	if link == nil {
		t.Fatalf("no login link in the log:\n%s", logBuf.String())
	}
	u, err := url.Parse(link[1])
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "https://mcp.example.com"+u.RequestURI(), nil)
	r.Header.Set("Sec-Fetch-Site", "none")
	w := httptest.NewRecorder()
	c.ServeHTTP(w, r)
	if got := w.Header().Get("Set-Cookie"); !strings.HasPrefix(got, "__Host-plughost_console=") || !strings.Contains(got, "Secure") {
		t.Errorf("behind a TLS proxy the session cookie is %q, want __Host- and Secure", got)
	}
}
