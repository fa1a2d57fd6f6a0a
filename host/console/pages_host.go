package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Bounds of what the console reads and shows.
const (
	// auditLines is how many of the audit log's last lines the audit
	// page shows.
	auditLines = 200
	// taskRows is how many tasks the sessions page lists.
	taskRows = 200
	// maxCallerField and maxClaims bound the catalog form's fields: a
	// subject or client id, and the claims' JSON.
	maxCallerField = 256
	maxClaims      = 4096
)

// catalogBody is the catalog page: the caller whose view it is (the form's
// fields, filled), what it sees, and why the form was refused (Problem).
type catalogBody struct {
	Subject, ClientID, Claims string
	// Other: the view is of the caller the form names, not the user's.
	Other   bool
	Problem string
	Catalog Catalog
}

// catalogPage shows what a caller sees: the signed-in user by default,
// or the caller the form names (subject, client_id, and claims as a JSON
// object), as the access rules in force would let it.
func (h *Handler) catalogPage(w http.ResponseWriter, r *http.Request, u *user) {
	q := r.URL.Query()
	b := catalogBody{Subject: q.Get("subject"), ClientID: q.Get("client_id"), Claims: q.Get("claims")}
	caller := u.caller
	if b.Other = b.Subject != "" || b.ClientID != "" || b.Claims != ""; b.Other {
		c, err := formCaller(b.Subject, b.ClientID, b.Claims)
		if err != nil {
			b.Problem = err.Error()
			if len(b.Claims) > maxClaims { // not echoed back whole either
				b.Claims = b.Claims[:maxClaims]
			}
			h.render(w, http.StatusBadRequest, "catalog", newView(u, "Catalog", "catalog", b))
			return
		}
		caller = *c
	}
	b.Catalog = h.opts.Source.Catalog(&caller)
	h.render(w, http.StatusOK, "catalog", newView(u, "Catalog", "catalog", b))
}

// formCaller is the caller the catalog form names, or why it names none.
func formCaller(subject, clientID, claims string) (*Caller, error) {
	switch {
	case len(subject) > maxCallerField:
		return nil, fmt.Errorf("the subject is %d bytes; at most %d are read", len(subject), maxCallerField)
	case len(clientID) > maxCallerField:
		return nil, fmt.Errorf("the client id is %d bytes; at most %d are read", len(clientID), maxCallerField)
	case len(claims) > maxClaims:
		return nil, fmt.Errorf("the claims are %d bytes; at most %d are read", len(claims), maxClaims)
	}
	c := &Caller{Subject: subject, ClientID: clientID}
	if claims != "" {
		if err := json.Unmarshal([]byte(claims), &c.Claims); err != nil {
			return nil, fmt.Errorf("the claims are not a JSON object (e.g. {\"groups\":[\"ops\"]}): %v", err)
		}
		if c.Claims == nil {
			return nil, fmt.Errorf("the claims are not a JSON object (e.g. {\"groups\":[\"ops\"]}): null")
		}
	}
	return c, nil
}

// sessionsBody is the sessions page: open sessions, tasks, and why the
// tasks could not be listed.
type sessionsBody struct {
	Sessions   []sessionRow
	Tasks      []taskRow
	TasksError string
}

type sessionRow struct {
	Session
	Age string
}

type taskRow struct {
	Task
	Age string
}

// sessionsPage lists the open MCP sessions and the tasks kept.
func (h *Handler) sessionsPage(w http.ResponseWriter, r *http.Request, u *user) {
	now := h.opts.Now()
	var b sessionsBody
	for _, s := range h.opts.Source.Sessions() {
		b.Sessions = append(b.Sessions, sessionRow{Session: s, Age: age(now, s.Started)})
	}
	tasks, err := h.opts.Source.Tasks(r.Context(), taskRows)
	if err != nil {
		b.TasksError = err.Error()
	}
	for _, t := range tasks {
		b.Tasks = append(b.Tasks, taskRow{Task: t, Age: age(now, t.Created)})
	}
	h.render(w, http.StatusOK, "sessions", newView(u, "Sessions and tasks", "sessions", b))
}

// age is how long ago t was, rounded to what a person reads ("3m12s").
func age(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

// callsPage is the calls per tool, from the metrics.
func (h *Handler) callsPage(w http.ResponseWriter, r *http.Request, u *user) {
	h.render(w, http.StatusOK, "calls", newView(u, "Calls", "calls", h.opts.Source.Calls()))
}

// auditBody is the audit page: whether an audit log is written at all,
// and its last lines.
type auditBody struct {
	Written bool
	Lines   []string
}

// auditPage is the audit log's last lines: a line that is a JSON object
// is indented so a person can read it; every line is text.
func (h *Handler) auditPage(w http.ResponseWriter, r *http.Request, u *user) {
	lines := h.opts.Source.Audit(auditLines)
	pretty := make([]string, 0, len(lines))
	for _, line := range lines {
		var buf bytes.Buffer
		if len(line) > 0 && line[0] == '{' && json.Indent(&buf, []byte(line), "", "  ") == nil {
			line = buf.String()
		}
		pretty = append(pretty, line)
	}
	h.render(w, http.StatusOK, "audit", newView(u, "Audit log", "audit", auditBody{Written: lines != nil, Lines: pretty}))
}

// configPage is the configuration in force with where each value came from.
func (h *Handler) configPage(w http.ResponseWriter, r *http.Request, u *user) {
	h.render(w, http.StatusOK, "config", newView(u, "Configuration", "config", h.opts.Source.Config()))
}
