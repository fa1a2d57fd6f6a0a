package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// testPlugins: one quarantined (never approved), one running approved
// with a held definition, one running approved with nothing held, and one
// whose name is awkward in a URL.
func testPlugins() []Plugin {
	return []Plugin{
		{Name: "fresh", State: "quarantined", TrustMode: "pinned", TrustState: "pending", Digest: "sha256:f1"},
		{Name: "notes", State: "running", TrustMode: "pinned", TrustState: "approved", Digest: "sha256:n1", Listing: "sha256:l1",
			Tools: []Definition{{Name: "notes_add", Description: "Adds a note."}},
			Held: []Held{{Kind: "tool", Name: "notes_del", State: "changed",
				Diff: []string{"  Deletes", "- one note.", "+ every note."}}}},
		{Name: "weather", State: "running", TrustMode: "pinned", TrustState: "approved", Digest: "sha256:w1"},
		{Name: "a/../b?c#d", State: "crashed", TrustMode: "open", TrustState: "open"},
	}
}

// TestPluginsPageLinksEveryPlugin: one row per plugin with its name and
// state, whose link opens that plugin's page, awkward names included.
func TestPluginsPageLinksEveryPlugin(t *testing.T) {
	src := &fakeSource{plugins: testPlugins()}
	h := newTestHandler(t, src)
	cookie := signIn(t, bob())
	doc := parse(t, get(t, h, "/console/plugins", cookie).Body.String())
	rows := find(doc, func(n *html.Node) bool { _, ok := attr(n, "data-plugin"); return n.Data == "tr" && ok })
	if len(rows) != len(src.plugins) {
		t.Fatalf("%d rows, want %d", len(rows), len(src.plugins))
	}
	for i, row := range rows {
		p := src.plugins[i]
		if name, _ := attr(row, "data-plugin"); name != p.Name {
			t.Errorf("row %d is %q, want %q", i, name, p.Name)
		}
		if state, _ := attr(row, "data-state"); state != p.State {
			t.Errorf("row %q: state %q, want %q", p.Name, state, p.State)
		}
		links := find(row, func(n *html.Node) bool { return n.Data == "a" })
		href, _ := attr(links[0], "href")
		page := get(t, h, href, cookie)
		facts := find(parse(t, page.Body.String()), byAttr("data-testid", "facts"))
		if page.Code != http.StatusOK || len(facts) != 1 {
			t.Fatalf("%q's link %q: %d", p.Name, href, page.Code)
		}
		if name, _ := attr(facts[0], "data-plugin"); name != p.Name {
			t.Errorf("%q's link %q opens %q's page", p.Name, href, name)
		}
	}
}

// TestPluginPage shows a plugin's facts, tools, held definitions with
// their diff lines styled, and the forms the user may use: alice (may
// approve) gets approve with the page's digest and revoke; bob gets
// neither, though he sees the same facts.
func TestPluginPage(t *testing.T) {
	src := &fakeSource{plugins: testPlugins()}
	h := newTestHandler(t, src)
	for _, tc := range []struct {
		user                    *user
		plugin                  string
		wantApprove, wantRevoke bool
	}{
		{alice(), "fresh", true, false},       // quarantined, never approved
		{alice(), "notes", true, true},        // approved, a definition held
		{alice(), "weather", false, true},     // approved, nothing to approve
		{alice(), "a/../b?c#d", false, false}, // open mode: nothing to decide
		{bob(), "fresh", false, false},
		{bob(), "notes", false, false},
		{holder(), "fresh", true, false},
	} {
		doc := parse(t, get(t, h, pluginURL(tc.plugin), signIn(t, tc.user)).Body.String())
		approve := find(doc, byAttr("data-testid", "approve"))
		revoke := find(doc, byAttr("data-testid", "revoke"))
		if len(approve) == 1 != tc.wantApprove || len(revoke) == 1 != tc.wantRevoke {
			t.Errorf("%s on %q: %d approve and %d revoke forms, want %v %v",
				tc.user.name, tc.plugin, len(approve), len(revoke), tc.wantApprove, tc.wantRevoke)
			continue
		}
		if tc.wantApprove {
			fields := formFields(approve[0])
			p := pluginNamed(src, tc.plugin)
			want := url.Values{"plugin": {tc.plugin}, "digest": {p.Digest}, "listing": {p.Listing}, "csrf": {tc.user.csrf}}
			if fields.Encode() != want.Encode() {
				t.Errorf("%q's approve form carries %v, want %v", tc.plugin, fields, want)
			}
			if len(find(approve[0], byAttr("data-testid", "approve-button"))) != 1 {
				t.Errorf("%q's approve form has no approve-button", tc.plugin)
			}
		}
	}

	doc := parse(t, get(t, h, pluginURL("notes"), signIn(t, bob())).Body.String())
	tools := find(doc, func(n *html.Node) bool { return n.Data == "li" && inTestID(n, "tools") })
	if len(tools) != 1 || !strings.Contains(text(tools[0]), "notes_add") || !strings.Contains(text(tools[0]), "Adds a note.") {
		t.Errorf("tools: %d items", len(tools))
	}
	held := find(doc, byAttr("data-testid", "held"))
	if len(held) != 1 || attrOf(held[0], "data-kind") != "tool" || attrOf(held[0], "data-name") != "notes_del" {
		t.Fatalf("held items: %d", len(held))
	}
	var classes []string
	for _, span := range find(held[0], func(n *html.Node) bool { return n.Data == "span" && inTestID(n, "diff") }) {
		classes = append(classes, attrOf(span, "class")+":"+text(span))
	}
	want := []string{"same:  Deletes", "removed:- one note.", "added:+ every note."}
	if !slices.Equal(classes, want) {
		t.Errorf("diff lines %q, want %q", classes, want)
	}
}

// TestHeldPage lists what waits for a decision (the quarantined plugin,
// the plugin with a held definition) and nothing else, with approve forms
// for alice only.
func TestHeldPage(t *testing.T) {
	src := &fakeSource{plugins: testPlugins()}
	h := newTestHandler(t, src)
	for _, tc := range []struct {
		user  *user
		forms int
	}{{alice(), 2}, {bob(), 0}} {
		doc := parse(t, get(t, h, "/console/held", signIn(t, tc.user)).Body.String())
		var shown []string
		for _, s := range find(doc, func(n *html.Node) bool { return n.Data == "section" && attrOf(n, "data-plugin") != "" }) {
			shown = append(shown, attrOf(s, "data-plugin"))
		}
		if !slices.Equal(shown, []string{"fresh", "notes"}) {
			t.Errorf("held page shows %q", shown)
		}
		if n := len(find(doc, byAttr("data-testid", "approve"))); n != tc.forms {
			t.Errorf("%s: %d approve forms, want %d", tc.user.name, n, tc.forms)
		}
	}
}

// TestApprovePost: an approval by a user the rules let approve calls
// Source.Approve with the reviewed digest and the user's name and goes
// back to the plugin's page; refused (403) when the rules do not let
// them, 409 when the file changed since, 404 for no such plugin, 400 for
// a form missing a field, and the CSRF token is required (the real check
// is auth's; here its stand-in, to show the POST goes through it).
func TestApprovePost(t *testing.T) {
	for _, tc := range []struct {
		name     string
		user     *user
		form     url.Values
		err      error
		want     int
		recorded []string
		says     string
	}{
		{"approved", alice(), url.Values{"plugin": {"fresh"}, "digest": {"sha256:f1"}}, nil, http.StatusSeeOther,
			[]string{"approve fresh sha256:f1 alice via https://issuer.test"}, ""},
		{"with the listing the page showed", alice(), url.Values{"plugin": {"notes"}, "digest": {"sha256:n1"}, "listing": {"sha256:l1"}},
			nil, http.StatusSeeOther, []string{"approve notes sha256:n1 sha256:l1 alice via https://issuer.test"}, ""},
		{"refused by the rules", bob(), url.Values{"plugin": {"fresh"}, "digest": {"sha256:f1"}}, nil, http.StatusForbidden,
			nil, "do not let you approve"},
		{"changed since reviewed", alice(), url.Values{"plugin": {"fresh"}, "digest": {"sha256:old"}}, ErrChanged, http.StatusConflict,
			[]string{"approve fresh sha256:old alice via https://issuer.test"}, "changed since you reviewed it"},
		{"host fails", alice(), url.Values{"plugin": {"fresh"}, "digest": {"sha256:f1"}}, errors.New("trust file: <disk full>"),
			http.StatusInternalServerError, []string{"approve fresh sha256:f1 alice via https://issuer.test"}, "trust file: <disk full>"},
		{"no such plugin", alice(), url.Values{"plugin": {"ghost"}, "digest": {"x"}}, nil, http.StatusNotFound, nil, `"ghost"`},
		{"no plugin", alice(), url.Values{"digest": {"x"}}, nil, http.StatusBadRequest, nil, "names no plugin"},
		{"no digest", alice(), url.Values{"plugin": {"fresh"}}, nil, http.StatusBadRequest, nil, "no digest"},
		{"no csrf", alice(), url.Values{"plugin": {"fresh"}, "digest": {"sha256:f1"}, "csrf": {"forged"}}, nil,
			http.StatusForbidden, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSource{plugins: testPlugins(), approveErr: tc.err}
			h := newTestHandler(t, src)
			cookie := signIn(t, tc.user)
			if !tc.form.Has("csrf") {
				tc.form.Set("csrf", tc.user.csrf)
			}
			w := post(t, h, "/console/approve", cookie, tc.form)
			if w.Code != tc.want {
				t.Fatalf("%d, want %d: %.300s", w.Code, tc.want, w.Body)
			}
			if got := src.recorded(); !slices.Equal(got, tc.recorded) {
				t.Errorf("Source saw %q, want %q", got, tc.recorded)
			}
			if tc.want == http.StatusSeeOther && w.Header().Get("Location") != "/console/plugins/"+tc.form.Get("plugin") {
				t.Errorf("sent to %q", w.Header().Get("Location"))
			}
			if tc.says != "" && !strings.Contains(text(parse(t, w.Body.String())), tc.says) {
				t.Errorf("the page does not say %q: %.400s", tc.says, w.Body)
			}
		})
	}
}

// TestApproveNeedsTheConsoleToo: a person whom the rules in force no
// longer admit to the console changes nothing through a session still
// open, though a rule lets them approve.
func TestApproveNeedsTheConsoleToo(t *testing.T) {
	src := &fakeSource{plugins: testPlugins()}
	approveOnly := func(c *Caller, kind, plugin string) bool { return kind == "approve" }
	h := newTestHandler(t, src, func(o *Options) { o.Allowed = approveOnly })
	u := alice()
	w := post(t, h, "/console/approve", signIn(t, u), url.Values{"plugin": {"fresh"}, "digest": {"sha256:f1"}, "csrf": {u.csrf}})
	if w.Code != http.StatusForbidden || len(src.recorded()) != 0 {
		t.Fatalf("%d, Source saw %q; want 403 and nothing", w.Code, src.recorded())
	}
}

// TestRevokePost: revoke is checked as approve is and records the user.
func TestRevokePost(t *testing.T) {
	src := &fakeSource{plugins: testPlugins()}
	h := newTestHandler(t, src)
	bu := bob()
	b := signIn(t, bu)
	if w := post(t, h, "/console/revoke", b, url.Values{"plugin": {"weather"}, "csrf": {bu.csrf + "x"}}); w.Code != http.StatusForbidden {
		t.Errorf("bob without his csrf: %d", w.Code)
	}
	if w := post(t, h, "/console/revoke", b, url.Values{"plugin": {"weather"}, "csrf": {bu.csrf}}); w.Code != http.StatusForbidden {
		t.Errorf("bob: %d, want 403", w.Code)
	}
	a := alice()
	w := post(t, h, "/console/revoke", signIn(t, a), url.Values{"plugin": {"weather"}, "csrf": {a.csrf}})
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/plugins/weather" {
		t.Errorf("alice: %d to %q", w.Code, w.Header().Get("Location"))
	}
	if got := src.recorded(); !slices.Equal(got, []string{"revoke weather alice via https://issuer.test"}) {
		t.Errorf("Source saw %q", got)
	}
}

// TestPagesNeedASessionAndTheConsoleRight: without a session a page sends
// the browser to log in (and back after), a POST is refused; a user the
// rules do not let see the console gets a 403 page saying so; an unknown
// plugin or page is a 404 page.
func TestPagesNeedASessionAndTheConsoleRight(t *testing.T) {
	src := &fakeSource{plugins: testPlugins()}
	h := newTestHandler(t, src)
	for _, path := range []string{"/console/plugins", "/console/plugins/fresh", "/console/held", "/console/catalog",
		"/console/sessions", "/console/calls", "/console/audit", "/console/config", "/console/events"} {
		w := get(t, h, path, nil)
		loc, _ := url.Parse(w.Header().Get("Location"))
		if next := loc.Query().Get("next"); w.Code != http.StatusSeeOther || loc.Path != "/console/login" ||
			next != path && !(next == "" && path == "/console/plugins") { // back to the page after, the default aside
			t.Errorf("GET %s without a session: %d to %q", path, w.Code, loc)
		}
		w = get(t, h, path, signIn(t, nobody()))
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "do not let you see the console") {
			t.Errorf("GET %s by mallory: %d %.200s", path, w.Code, w.Body)
		}
	}
	for _, tc := range []struct{ path, want string }{
		{"/console", "/console/login"}, {"/console/", "/console/login"},
	} {
		if w := get(t, h, tc.path, nil); w.Code != http.StatusSeeOther || w.Header().Get("Location") != tc.want {
			t.Errorf("GET %s: %d to %q", tc.path, w.Code, w.Header().Get("Location"))
		}
		if w := get(t, h, tc.path, signIn(t, bob())); w.Header().Get("Location") != "/console/plugins" {
			t.Errorf("GET %s signed in: to %q", tc.path, w.Header().Get("Location"))
		}
	}
	if w := post(t, h, "/console/approve", nil, url.Values{"plugin": {"fresh"}, "digest": {"sha256:f1"}}); w.Code != http.StatusForbidden {
		t.Errorf("POST without a session: %d", w.Code)
	}
	if len(src.recorded()) != 0 {
		t.Errorf("Source saw %q", src.recorded())
	}
	for _, tc := range []struct {
		path   string
		cookie *http.Cookie
		who    string
	}{
		{"/console/plugins/ghost", signIn(t, bob()), "bob via https://issuer.test"},
		{"/console/nowhere", signIn(t, bob()), "bob via https://issuer.test"},
		{"/console/nowhere", nil, "Sign in"},
	} {
		w := get(t, h, tc.path, tc.cookie)
		doc := parse(t, w.Body.String())
		who := find(doc, byAttr("data-testid", "whoami"))
		if w.Code != http.StatusNotFound || len(find(doc, byAttr("data-testid", "error"))) != 1 ||
			len(who) != 1 || !strings.Contains(text(who[0]), tc.who) {
			t.Errorf("GET %s: %d %.300s", tc.path, w.Code, w.Body)
		}
	}
}

// TestCatalogPage shows the signed-in user's view by default, the named
// caller's when the form names one (claims parsed from JSON), and says
// why a form is refused: claims that are not a JSON object, fields too
// long.
func TestCatalogPage(t *testing.T) {
	src := &fakeSource{catalog: Catalog{Tools: []Definition{{Name: "notes_add"}, {Name: "weather_now"}}}}
	h := newTestHandler(t, src)
	cookie := signIn(t, alice())
	doc := parse(t, get(t, h, "/console/catalog", cookie).Body.String())
	if n := len(find(doc, func(n *html.Node) bool { return n.Data == "li" && inTestID(n, "catalog-tools") })); n != 2 {
		t.Errorf("%d catalog-tools items, want 2", n)
	}
	w := get(t, h, "/console/catalog?subject=bob&client_id=cli&claims="+url.QueryEscape(`{"groups":["readers"]}`), cookie)
	if w.Code != http.StatusOK {
		t.Fatalf("named caller: %d", w.Code)
	}
	if len(src.callers) != 2 || src.callers[0].Subject != "alice" ||
		src.callers[1].Subject != "bob" || src.callers[1].ClientID != "cli" ||
		!slices.Equal(src.callers[1].Claims["groups"].([]any), []any{"readers"}) {
		t.Errorf("Source.Catalog saw %+v", src.callers)
	}
	for _, tc := range []struct{ query, says string }{
		{"claims=" + url.QueryEscape(`["ops"]`), "not a JSON object"},
		{"claims=null", "not a JSON object"},
		{"claims=" + url.QueryEscape(`{"groups":`), "not a JSON object"},
		{"subject=" + strings.Repeat("s", maxCallerField+1), "the subject is 257 bytes"},
		{"claims=" + strings.Repeat("x", maxClaims+1), "at most 4096"},
	} {
		w := get(t, h, "/console/catalog?"+tc.query, cookie)
		problem := find(parse(t, w.Body.String()), byAttr("data-testid", "catalog-problem"))
		if w.Code != http.StatusBadRequest || len(problem) != 1 || !strings.Contains(text(problem[0]), tc.says) {
			t.Errorf("%.60s: %d, want 400 saying %q: %.300s", tc.query, w.Code, tc.says, w.Body)
		}
	}
	if len(src.callers) != 2 {
		t.Errorf("a refused form asked the Source: %d calls", len(src.callers))
	}
}

// TestTasksErrorShown: tasks that cannot be listed are said, not hidden.
func TestTasksErrorShown(t *testing.T) {
	h := newTestHandler(t, &fakeSource{tasksErr: errors.New("redis: connection refused")})
	w := get(t, h, "/console/sessions", signIn(t, bob()))
	if !strings.Contains(w.Body.String(), "redis: connection refused") {
		t.Errorf("%.400s", w.Body)
	}
}

// TestAssets: the style sheet and the script are served with their types
// and the security headers (a CSP without 'unsafe-inline').
func TestAssets(t *testing.T) {
	h := newTestHandler(t, &fakeSource{})
	for path, typ := range map[string]string{"/console/assets/console.css": "text/css", "/console/assets/console.js": "text/javascript"} {
		w := get(t, h, path, nil)
		if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), typ) || w.Body.Len() < 100 {
			t.Errorf("%s: %d %q (%d bytes)", path, w.Code, w.Header().Get("Content-Type"), w.Body.Len())
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", path, csp)
		}
	}
}

func pluginNamed(src *fakeSource, name string) Plugin {
	i := slices.IndexFunc(src.plugins, func(p Plugin) bool { return p.Name == name })
	return src.plugins[i]
}

// formFields are the hidden inputs of form.
func formFields(form *html.Node) url.Values {
	v := url.Values{}
	for _, in := range find(form, func(n *html.Node) bool { return n.Data == "input" }) {
		v.Set(attrOf(in, "name"), attrOf(in, "value"))
	}
	return v
}

func attrOf(n *html.Node, key string) string {
	v, _ := attr(n, key)
	return v
}

// inTestID: n is inside an element whose data-testid is id.
func inTestID(n *html.Node, id string) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if attrOf(p, "data-testid") == id {
			return true
		}
	}
	return false
}

// TestCallsPage: one row per tool, latencies rounded as a person reads
// them, none shown for a tool never called.
func TestCallsPage(t *testing.T) {
	h := newTestHandler(t, &fakeSource{calls: []ToolCalls{
		{Tool: "notes_add", Plugin: "notes", Calls: 12, Errors: 2, P50: 1234567 * time.Nanosecond, P95: 2345678901 * time.Nanosecond},
		{Tool: "notes_del", Plugin: "notes"},
	}})
	doc := parse(t, get(t, h, "/console/calls", signIn(t, bob())).Body.String())
	var rows []string
	for _, tr := range find(doc, func(n *html.Node) bool { return n.Data == "tr" && attrOf(n, "data-tool") != "" }) {
		var cells []string
		for _, td := range find(tr, func(n *html.Node) bool { return n.Data == "td" }) {
			cells = append(cells, text(td))
		}
		rows = append(rows, strings.Join(cells, "|"))
	}
	want := []string{"notes_add|notes|12|2|1.23ms|2.35s", "notes_del|notes|0|0||"}
	if !slices.Equal(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
}
