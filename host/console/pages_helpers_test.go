package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/html"
)

// The pages' tests sign users in through a seam (identify) rather than
// through the login flows, which auth's tests prove: a request carrying
// the cookie testCookie is the user registered under its value; any other
// request goes to the real signedIn and checkPost, so tests of auth that
// run in the same binary are not affected.
const testCookie = "pages-test-user"

var testUsers sync.Map // cookie value → *user

func init() {
	signedIn, checkPost := identify.signedIn, identify.checkPost
	identify.signedIn = func(h *Handler, r *http.Request) *user {
		if u := testUser(r); u != nil {
			return u
		}
		return signedIn(h, r)
	}
	identify.checkPost = func(h *Handler, w http.ResponseWriter, r *http.Request) *user {
		u := testUser(r)
		if u == nil {
			return checkPost(h, w, r)
		}
		if r.PostFormValue("csrf") != u.csrf {
			http.Error(w, "forbidden: no csrf", http.StatusForbidden)
			return nil
		}
		return u
	}
}

func testUser(r *http.Request) *user {
	c, err := r.Cookie(testCookie)
	if err != nil {
		return nil
	}
	u, _ := testUsers.Load(c.Value)
	if u == nil {
		return nil
	}
	return u.(*user)
}

// signIn registers u for t and returns its cookie.
func signIn(t *testing.T, u *user) *http.Cookie {
	t.Helper()
	key := t.Name() + "/" + u.name
	u.csrf = cmpString(u.csrf, "csrf-"+key)
	testUsers.Store(key, u)
	t.Cleanup(func() { testUsers.Delete(key) })
	return &http.Cookie{Name: testCookie, Value: key}
}

func cmpString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// The test identities: the static token's holder (every right), alice
// (groups ops and readers: may approve) and bob (readers: may look only),
// decided by opsApprove as the browser test's rule decides them.
func holder() *user { return &user{name: "the static token's holder", full: true} }
func alice() *user {
	return &user{name: "alice via https://issuer.test", caller: Caller{Subject: "alice", Issuer: "https://issuer.test",
		Claims: map[string]any{"groups": []any{"ops", "readers"}}}}
}
func bob() *user {
	return &user{name: "bob via https://issuer.test", caller: Caller{Subject: "bob", Issuer: "https://issuer.test",
		Claims: map[string]any{"groups": []any{"readers"}}}}
}
func nobody() *user {
	return &user{name: "mallory via https://issuer.test", caller: Caller{Subject: "mallory"}}
}

// opsApprove is `allow = "item.kind != 'approve' || 'ops' in
// caller.claims.groups"`, and nobody may not see the console at all.
func opsApprove(c *Caller, kind, plugin string) bool {
	if c.Subject == "mallory" {
		return false
	}
	groups, _ := c.Claims["groups"].([]any)
	return kind != "approve" || slices.Contains(groups, any("ops"))
}

// fakeSource is a Source of fixed answers that records the changes asked.
type fakeSource struct {
	plugins  []Plugin
	catalog  Catalog
	sessions []Session
	tasks    []Task
	tasksErr error
	calls    []ToolCalls
	audit    []string
	config   []Setting
	// approveErr is what Approve and Revoke answer.
	approveErr error

	mu      sync.Mutex
	changes []string  // "approve PLUGIN DIGEST [LISTING] BY", "revoke PLUGIN BY"
	callers []*Caller // Catalog's callers
	watches int
	changed func(Event)
	stopped int
}

func (f *fakeSource) Plugins() []Plugin { return f.plugins }
func (f *fakeSource) Catalog(c *Caller) Catalog {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.callers = append(f.callers, c)
	return f.catalog
}
func (f *fakeSource) Sessions() []Session { return f.sessions }
func (f *fakeSource) Tasks(ctx context.Context, limit int) ([]Task, error) {
	return f.tasks, f.tasksErr
}
func (f *fakeSource) Calls() []ToolCalls   { return f.calls }
func (f *fakeSource) Audit(n int) []string { return f.audit }
func (f *fakeSource) Config() []Setting    { return f.config }
func (f *fakeSource) Approve(ctx context.Context, plugin, digest, listing, by string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if listing != "" {
		digest += " " + listing
	}
	f.changes = append(f.changes, "approve "+plugin+" "+digest+" "+by)
	return f.approveErr
}
func (f *fakeSource) Revoke(ctx context.Context, plugin, by string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes = append(f.changes, "revoke "+plugin+" "+by)
	return f.approveErr
}
func (f *fakeSource) Watch(changed func(Event)) (stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watches++
	f.changed = changed
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.stopped++
	}
}

func (f *fakeSource) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.changes)
}

// newTestHandler is a console over src whose rules are opsApprove.
func newTestHandler(t *testing.T, src Source, edit ...func(*Options)) *Handler {
	t.Helper()
	o := &Options{Source: src, Allowed: opsApprove}
	for _, e := range edit {
		e(o)
	}
	h, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// get GETs path as the user of cookie (nil: no one).
func get(t *testing.T, h http.Handler, path string, cookie *http.Cookie) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://console.test"+path, nil)
	if cookie != nil {
		r.AddCookie(cookie)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// post POSTs form to path as the user of cookie.
func post(t *testing.T, h http.Handler, path string, cookie *http.Cookie, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "http://console.test"+path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != nil {
		r.AddCookie(cookie)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// parse parses a page, failing t if it is not HTML.
func parse(t *testing.T, body string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// find returns the elements under n for which match holds, in document order.
func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var found []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			found = append(found, d)
		}
	}
	return found
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// byAttr matches elements whose attribute key is val.
func byAttr(key, val string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		v, ok := attr(n, key)
		return ok && v == val
	}
}

// text is the text under n, as a browser shows it (entities decoded).
func text(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}
