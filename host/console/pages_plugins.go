package console

import (
	"net/http"
	"slices"
	"strconv"
)

// pluginView is a plugin with what the signed-in user may do to it.
type pluginView struct {
	Plugin
	// CanApprove: the user may approve it and there is something to
	// approve (it is quarantined, or has held definitions); the page
	// shows the approve form, whose digest is the one on the page.
	CanApprove bool
	// CanRevoke: the user may revoke it and it has an approval (its
	// trust state is approved, or changed: approved with another digest).
	CanRevoke bool
}

// viewPlugin is p as u sees it.
func (h *Handler) viewPlugin(u *user, p Plugin) pluginView {
	v := pluginView{Plugin: p}
	if !h.may(u, "approve", p.Name) {
		return v
	}
	v.CanApprove = p.State == "quarantined" || len(p.Held) > 0
	v.CanRevoke = p.TrustState == "approved" || p.TrustState == "changed"
	return v
}

// pluginsPage lists every plugin: one row each, linking to its page.
func (h *Handler) pluginsPage(w http.ResponseWriter, r *http.Request, u *user) {
	h.render(w, http.StatusOK, "plugins", newView(u, "Plugins", "plugins", h.opts.Source.Plugins()))
}

// pluginPage is everything the host knows of one plugin, with its held
// definitions' diffs and the approve and revoke forms the user may use.
func (h *Handler) pluginPage(w http.ResponseWriter, r *http.Request, u *user) {
	name := r.PathValue("name")
	plugins := h.opts.Source.Plugins()
	i := slices.IndexFunc(plugins, func(p Plugin) bool { return p.Name == name })
	if i < 0 {
		h.renderError(w, r, u, http.StatusNotFound, "No such plugin",
			"The host has no plugin named "+strconv.Quote(name)+".")
		return
	}
	p := h.viewPlugin(u, plugins[i])
	h.render(w, http.StatusOK, "plugin", newView(u, "Plugin "+p.Name, "plugins", p))
}

// heldPage is what waits for a decision: every quarantined plugin and
// every plugin with held definitions, each with its diffs and forms.
func (h *Handler) heldPage(w http.ResponseWriter, r *http.Request, u *user) {
	var held []pluginView
	for _, p := range h.opts.Source.Plugins() {
		if p.State == "quarantined" || len(p.Held) > 0 {
			held = append(held, h.viewPlugin(u, p))
		}
	}
	h.render(w, http.StatusOK, "held", newView(u, "Held for approval", "held", held))
}
