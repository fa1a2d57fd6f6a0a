package console

import (
	"net/http"
	"time"
)

// STUB (to be replaced by the auth work): the signed-in sessions, the
// login routes and the POST checks.

// sessions are the signed-in sessions, by the cookie's random id.
type sessions struct{}

func newSessions(max int, ttl time.Duration, now func() time.Time) *sessions { return &sessions{} }

// signedIn returns the user of r's session cookie; nil when r has none
// that is live.
func (h *Handler) signedIn(r *http.Request) *user { return nil }

// checkPost checks a POST that changes something: from a page of the
// console's own origin, with a live session and its CSRF token (form
// field "csrf"). It returns the user, or nil once it has answered 403 (or
// 303 to the login page).
func (h *Handler) checkPost(w http.ResponseWriter, r *http.Request) *user {
	http.Error(w, "forbidden", http.StatusForbidden)
	return nil
}

// authRoutes registers the login and logout routes.
func (h *Handler) authRoutes() {}
