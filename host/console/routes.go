package console

import "html/template"

// STUB (to be replaced by the pages work).

// funcs are the templates' functions.
var funcs = template.FuncMap{}

// routes registers every route under Path.
func (h *Handler) routes() {
	h.authRoutes()
}
