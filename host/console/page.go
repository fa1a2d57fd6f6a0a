package console

import (
	"net/http"
)

// view is what the layout ("top" and "bottom" in templates/layout.html)
// and a page's template are given: the frame (title, the current nav
// entry, who is signed in and the CSRF token their forms carry) and the
// page's own Body.
type view struct {
	Title string
	// Nav is the nav entry that is current ("plugins", "held", …).
	Nav string
	// Who is the signed-in user's name, CSRF their session's token; both
	// empty on a page shown to no one signed in.
	Who, CSRF string
	Body      any
}

// newView is the frame of a page for u (nil: no one signed in).
func newView(u *user, title, nav string, body any) view {
	v := view{Title: title, Nav: nav, Body: body}
	if u != nil {
		v.Who, v.CSRF = u.name, u.csrf
	}
	return v
}

// pageFunc renders one page for a user the rules let see the console.
type pageFunc func(w http.ResponseWriter, r *http.Request, u *user)

// page wraps a page: no session sends a browser to log in (and back here
// after, through next); a user the rules do not let see the console gets
// the 403 page naming why.
func (h *Handler) page(render pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u := identify.signedIn(h, r)
		if u == nil {
			h.signInFirst(w, r)
			return
		}
		if !h.may(u, "console", "") {
			h.log.Warn("console page refused by the access rules", "user", u.name, "path", r.URL.Path)
			h.renderError(w, r, u, http.StatusForbidden, "Not allowed",
				"You are signed in as "+u.name+", but the access rules in force do not let you see the console "+
					"(an allow rule of item kind \"console\" must hold for you).")
			return
		}
		render(w, r, u)
	}
}

// errorBody is the body of the error page.
type errorBody struct {
	Status  int
	Message string
}

// renderError answers status with the error page: title and message, as
// text, in the console's frame (u nil: no one signed in).
func (h *Handler) renderError(w http.ResponseWriter, r *http.Request, u *user, status int, title, message string) {
	h.render(w, status, "error", newView(u, title, "", errorBody{Status: status, Message: message}))
}
