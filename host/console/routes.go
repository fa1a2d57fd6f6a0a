package console

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// funcs are the templates' functions. None of them returns template.HTML
// or another trusted type: what they give is text, escaped by html/template
// for where it lands.
var funcs = template.FuncMap{
	"pluginURL": pluginURL,
	"diffClass": diffClass,
	"join":      strings.Join,
	"dict":      dict,
	"duration":  roundDuration,
}

// roundDuration is d to three digits or so, as a person reads a latency
// ("1.23ms", "2.5s"), not to the nanosecond.
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// dict makes a map of its key, value pairs: how a template passes more
// than one value to another ({{template "x" (dict "A" .a "B" .b)}}).
func dict(pairs ...any) (map[string]any, error) {
	if len(pairs)%2 != 0 {
		return nil, errors.New("dict: an odd number of arguments")
	}
	m := make(map[string]any, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		k, ok := pairs[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict: key %d is a %T, not a string", i/2, pairs[i])
		}
		m[k] = pairs[i+1]
	}
	return m, nil
}

// pluginURL is the path of plugin's page. The name is path-escaped here
// so that a name like "../held" or "a?b" stays one segment; html/template
// then only normalizes it.
func pluginURL(name string) string {
	return Path + "/plugins/" + url.PathEscape(name)
}

// diffClass is the style of one line of a word diff
// (trust.HeldDefinition.Diff): "- " was approved, "+ " is listed now.
func diffClass(line string) string {
	switch {
	case strings.HasPrefix(line, "- "):
		return "removed"
	case strings.HasPrefix(line, "+ "):
		return "added"
	}
	return "same"
}

// identify is how a page finds its user and how a change checks its POST.
// It is auth.go's signedIn and checkPost; the pages' tests replace it
// (pages_test.go) so that they sign a user in without the login flows,
// which auth_test.go proves.
var identify = struct {
	signedIn  func(h *Handler, r *http.Request) *user
	checkPost func(h *Handler, w http.ResponseWriter, r *http.Request) *user
}{(*Handler).signedIn, (*Handler).checkPost}

// routes registers every route under Path. Each page is a GET of a user
// the rules let see the console (page); each change is a POST checked by
// checkPost and the rules again (approve.go).
func (h *Handler) routes() {
	h.authRoutes()
	h.events = newEventHub(h.opts.Source, cmp.Or(h.opts.MaxStreams, defaultMaxStreams), h.log)

	h.mux.HandleFunc("GET "+Path, h.home)
	h.mux.HandleFunc("GET "+Path+"/{$}", h.home)
	h.mux.HandleFunc("GET "+Path+"/assets/console.css", asset("assets/console.css"))
	h.mux.HandleFunc("GET "+Path+"/assets/console.js", asset("assets/console.js"))

	h.mux.HandleFunc("GET "+Path+"/plugins", h.page(h.pluginsPage))
	h.mux.HandleFunc("GET "+Path+"/plugins/{name}", h.page(h.pluginPage))
	h.mux.HandleFunc("GET "+Path+"/held", h.page(h.heldPage))
	h.mux.HandleFunc("GET "+Path+"/catalog", h.page(h.catalogPage))
	h.mux.HandleFunc("GET "+Path+"/sessions", h.page(h.sessionsPage))
	h.mux.HandleFunc("GET "+Path+"/calls", h.page(h.callsPage))
	h.mux.HandleFunc("GET "+Path+"/audit", h.page(h.auditPage))
	h.mux.HandleFunc("GET "+Path+"/config", h.page(h.configPage))
	h.mux.HandleFunc("GET "+Path+"/events", h.page(h.eventsStream))

	h.mux.HandleFunc("POST "+Path+"/approve", h.approve)
	h.mux.HandleFunc("POST "+Path+"/revoke", h.revoke)

	// Anything else under Path: the not-found page, not Go's plain one.
	h.mux.HandleFunc(Path+"/", func(w http.ResponseWriter, r *http.Request) {
		h.renderError(w, r, identify.signedIn(h, r), http.StatusNotFound, "Not found",
			"There is no console page at this address.")
	})
}

// home sends a signed-in user to the plugins page, anyone else to log in.
func (h *Handler) home(w http.ResponseWriter, r *http.Request) {
	if identify.signedIn(h, r) == nil {
		http.Redirect(w, r, Path+"/login", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Path+"/plugins", http.StatusSeeOther)
}

// asset serves one embedded file; its type comes from its extension (the
// nosniff header makes browsers hold to it).
func asset(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, assetFS, name)
	}
}
