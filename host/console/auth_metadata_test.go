package console

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// fakeIssuer serves, at RFC 8414's well-known URL, whatever document
// the test sets (nil: 404).
type fakeIssuer struct {
	*httptest.Server
	mu      sync.Mutex
	doc     map[string]any
	ctype   string
	fetches atomic.Int64
}

func newFakeIssuer(t *testing.T) *fakeIssuer {
	f := &fakeIssuer{ctype: "application/json"}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.fetches.Add(1)
		f.mu.Lock()
		doc, ctype := f.doc, f.ctype
		f.mu.Unlock()
		if doc == nil || r.URL.Path != "/.well-known/oauth-authorization-server" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ctype)
		json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(f.Close)
	return f
}

// good is a document the console accepts, with changes.
func (f *fakeIssuer) good(changes map[string]any) map[string]any {
	doc := map[string]any{"issuer": f.URL, "authorization_endpoint": f.URL + "/authorize", "token_endpoint": f.URL + "/token",
		"code_challenge_methods_supported": []string{"S256"}}
	for k, v := range changes {
		if v == nil {
			delete(doc, k)
		} else {
			doc[k] = v
		}
	}
	return doc
}

func (f *fakeIssuer) serve(doc map[string]any, ctype string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.doc, f.ctype = doc, ctype
}

func TestIssuerMetadataChecked(t *testing.T) {
	f := newFakeIssuer(t)
	for _, tc := range []struct {
		name    string
		doc     map[string]any
		ctype   string
		secret  string
		want    string // in the error; "" for none
		inParam bool
	}{
		{name: "a public client", doc: f.good(nil), inParam: true},
		{name: "a confidential client", doc: f.good(nil), secret: "s"},
		{name: "an issuer taking the secret in the form only", doc: f.good(map[string]any{
			"token_endpoint_auth_methods_supported": []string{"client_secret_post"}}), secret: "s", inParam: true},
		{name: "another issuer", doc: f.good(map[string]any{"issuer": "https://evil.example"}), want: `names the issuer "https://evil.example"`},
		{name: "no PKCE", doc: f.good(map[string]any{"code_challenge_methods_supported": nil}), want: "PKCE with S256"},
		{name: "PKCE plain only", doc: f.good(map[string]any{"code_challenge_methods_supported": []string{"plain"}}), want: "PKCE with S256"},
		{name: "a script authorization endpoint", doc: f.good(map[string]any{"authorization_endpoint": "javascript:alert(1)"}),
			want: `authorization_endpoint "javascript:alert(1)": want an https URL`},
		{name: "a plain http token endpoint", doc: f.good(map[string]any{"token_endpoint": "http://auth.example.com/token"}),
			want: "token_endpoint"},
		{name: "no token endpoint", doc: f.good(map[string]any{"token_endpoint": nil}), want: "token_endpoint"},
		{name: "not JSON", doc: f.good(nil), ctype: "text/html", want: "not JSON"},
		{name: "too large", doc: f.good(map[string]any{"x": strings.Repeat("x", maxMetadataBytes)}), want: "larger than"},
		{name: "none", want: "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.serve(tc.doc, cmp.Or(tc.ctype, "application/json"))
			l := newOAuthLogins(&OAuthLogin{Issuer: f.URL, ClientID: "c", ClientSecret: tc.secret}, time.Now)
			config, err := l.config(context.Background(), "http://127.0.0.1/console/oauth/callback")
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			style := oauth2.AuthStyleInHeader
			if tc.inParam {
				style = oauth2.AuthStyleInParams
			}
			if config.Endpoint.AuthURL != f.URL+"/authorize" || config.Endpoint.TokenURL != f.URL+"/token" || config.Endpoint.AuthStyle != style {
				t.Fatalf("the endpoint: %+v", config.Endpoint)
			}
		})
	}
}

func TestIssuerMetadataFailureAnsweredWithoutAskingForAWhile(t *testing.T) {
	f := newFakeIssuer(t)
	clock := &authClock{t: time.Now()}
	l := newOAuthLogins(&OAuthLogin{Issuer: f.URL, ClientID: "c"}, clock.now)
	ctx := context.Background()
	if _, err := l.config(ctx, "r"); err == nil {
		t.Fatal("no metadata, no error")
	}
	asked := f.fetches.Load() // both well-known URLs
	f.serve(f.good(nil), "application/json")
	if _, err := l.config(ctx, "r"); err == nil || f.fetches.Load() != asked {
		t.Fatalf("within %v of a failure: error %v, fetches %d → %d", metadataRetry, err, asked, f.fetches.Load())
	}
	clock.advance(metadataRetry)
	if _, err := l.config(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	asked = f.fetches.Load()
	clock.advance(metadataTTL - time.Second)
	if _, err := l.config(ctx, "r"); err != nil || f.fetches.Load() != asked {
		t.Fatalf("the endpoints should be kept %v: fetches %d → %d", metadataTTL, asked, f.fetches.Load())
	}
	clock.advance(time.Second)
	if _, err := l.config(ctx, "r"); err != nil || f.fetches.Load() != asked+1 {
		t.Fatalf("after %v the metadata should be read again: fetches %d → %d", metadataTTL, asked, f.fetches.Load())
	}
}
