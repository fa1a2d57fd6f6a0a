package console

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
)

// maxChangeBody bounds the body of an approve or revoke POST: a form of
// three short fields.
const maxChangeBody = 16 << 10

// approve approves a plugin as plughost approve does (Source.Approve), for
// the digest the page the user reviewed showed. The POST is checked again
// whatever the page showed: session, same origin and CSRF token
// (checkPost), then the access rules for this plugin, now.
func (h *Handler) approve(w http.ResponseWriter, r *http.Request) {
	h.change(w, r, "approve", func(u *user, plugin string) error {
		digest := r.PostFormValue("digest")
		if digest == "" {
			return errNoDigest
		}
		return h.opts.Source.Approve(r.Context(), plugin, digest, r.PostFormValue("listing"), u.name)
	})
}

// revoke removes a plugin's approval as plughost revoke does
// (Source.Revoke), checked as approve is.
func (h *Handler) revoke(w http.ResponseWriter, r *http.Request) {
	h.change(w, r, "revoke", func(u *user, plugin string) error {
		return h.opts.Source.Revoke(r.Context(), plugin, u.name)
	})
}

// errNoDigest: an approve form without the digest the page showed.
var errNoDigest = errors.New("the form carries no digest: approve from the plugin's page")

// change does one approve or revoke (verb) of the form's plugin by do,
// after the checks every change passes, and answers: 303 back to the
// plugin's page when done, else a page naming why not (400 a bad form,
// 403 refused, 404 no such plugin, 409 changed since reviewed, 500 the
// host failed).
func (h *Handler) change(w http.ResponseWriter, r *http.Request, verb string, do func(u *user, plugin string) error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxChangeBody)
	u := identify.checkPost(h, w, r)
	if u == nil {
		return // answered
	}
	plugin := r.PostFormValue("plugin")
	if plugin == "" {
		h.renderError(w, r, u, http.StatusBadRequest, "Nothing to "+verb,
			"The form names no plugin to "+verb+".")
		return
	}
	if !h.may(u, "console", "") || !h.may(u, "approve", plugin) { // one no longer admitted to the console changes nothing either
		h.log.Warn("console "+verb+" refused by the access rules", "plugin", plugin, "user", u.name)
		h.renderError(w, r, u, http.StatusForbidden, "Not allowed",
			"You are signed in as "+u.name+", but the access rules in force do not let you "+verb+" "+
				strconv.Quote(plugin)+" (an allow rule of item kind \"approve\" must hold for you and this plugin).")
		return
	}
	if !slices.ContainsFunc(h.opts.Source.Plugins(), func(p Plugin) bool { return p.Name == plugin }) {
		h.renderError(w, r, u, http.StatusNotFound, "No such plugin",
			"The host has no plugin named "+strconv.Quote(plugin)+" to "+verb+".")
		return
	}
	switch err := do(u, plugin); {
	case err == nil:
		h.log.Info("console "+verb, "plugin", plugin, "by", u.name)
		http.Redirect(w, r, pluginURL(plugin), http.StatusSeeOther)
	case errors.Is(err, errNoDigest):
		h.renderError(w, r, u, http.StatusBadRequest, "Nothing to "+verb, err.Error())
	case errors.Is(err, ErrChanged):
		h.renderError(w, r, u, http.StatusConflict, "Changed since you reviewed it",
			strconv.Quote(plugin)+" changed since you reviewed it: its file, or the definitions it lists, are not those the page showed. "+
				"Nothing was approved; review it again.")
	default:
		h.log.Error("console "+verb+" failed", "plugin", plugin, "by", u.name, "error", err)
		h.renderError(w, r, u, http.StatusInternalServerError, "Could not "+verb,
			"The host could not "+verb+" "+strconv.Quote(plugin)+": "+err.Error())
	}
}
