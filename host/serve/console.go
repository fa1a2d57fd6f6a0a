package serve

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/plughost/plughost/host/console"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/pluginproto"
)

// consoleSource is the running host as the console shows it
// (console.Source): each method reads what the package owning the data
// exposes (the manager's statuses, the catalog, the MCP servers' sessions,
// the tasks store, the metrics' registry, the audit log's recent lines,
// the configuration in force); approve and revoke write the trust file as
// plughost approve and revoke do, applied at once (console_approve.go);
// the configuration page is console_config.go, the live events
// console_events.go.
type consoleSource struct{ h *Host }

var _ console.Source = (*consoleSource)(nil)

// Plugins is every plugin the manager knows, as plughost plugins reports
// it (Report), with what only a running process has: its pid, restarts
// and last stderr lines.
func (s *consoleSource) Plugins() []console.Plugin {
	h := s.h
	live := map[[2]string]manager.PluginStatus{}
	for _, st := range h.manager.Status() {
		live[[2]string{st.Name, st.Path}] = st
	}
	report := h.Report()
	out := make([]console.Plugin, 0, len(report.Plugins))
	for _, p := range report.Plugins {
		cp := console.Plugin{Name: p.Name, Path: p.File, Version: p.Version, State: p.State, Contract: p.Contract,
			Sandbox: p.Sandbox, LastError: p.Error, LastStderr: p.Stderr, NextStep: p.NextStep}
		// A plugin that came between the two reads shows without them.
		if st, ok := live[[2]string{p.Name, p.File}]; ok {
			cp.PID, cp.Restarts, cp.Stderr = st.PID, st.Restarts, st.Stderr
			if st.State == manager.StateRunning {
				cp.Missing = h.obs.missing.of(st.Name)
			}
			v := st.Trust
			cp.TrustMode, cp.TrustState, cp.Digest, cp.Signer, cp.TrustReason = string(v.Mode), string(v.State), v.Digest, v.Signer, v.Reason
		}
		if p.Requests != nil {
			cp.Requested = requestLines(*p.Requests)
		}
		if p.NotGranted != nil {
			cp.Denied = requestLines(*p.NotGranted)
		}
		for _, t := range p.Tools {
			cp.Tools = append(cp.Tools, console.Definition{Name: t.ExposedName, Description: t.Description})
		}
		for _, t := range p.Prompts {
			cp.Prompts = append(cp.Prompts, console.Definition{Name: t.ExposedName, Description: t.Description})
		}
		for _, r := range p.Resources {
			cp.Resources = append(cp.Resources, console.Definition{Name: r.URI, Description: cmp.Or(r.Description, r.Name)})
		}
		for _, r := range p.Templates {
			cp.Templates = append(cp.Templates, console.Definition{Name: r.URITemplate, Description: cmp.Or(r.Description, r.Name)})
		}
		for _, held := range p.Held {
			cp.Held = append(cp.Held, console.Held{Kind: held.Kind, Name: held.Name, State: held.State, Reason: held.Reason,
				Diff: held.DiffLines(), Words: held.Diff()})
		}
		if cp.State == string(manager.StateQuarantined) || len(cp.Held) > 0 { // where an approve form is shown
			cp.Listing = s.listingOf(cp.Name, cp.Digest)
		}
		out = append(out, cp)
	}
	return out
}

// requestLines is what a plugin asks to be granted, one grant a line
// ("net: api.example.com:443").
func requestLines(r pluginproto.Requests) []string {
	var lines []string
	for _, g := range []struct {
		what string
		list []string
	}{{"read", r.Read}, {"write", r.Write}, {"net", r.Net}, {"env", r.Env}} {
		for _, v := range g.list {
			lines = append(lines, g.what+": "+v)
		}
	}
	return lines
}

// Catalog is what c would be listed under the access rules in force: the
// catalog's lists through the guard the rules give c, as an MCP session
// of that caller gets (accessFor); everything without rules.
func (s *consoleSource) Catalog(c *console.Caller) console.Catalog {
	h := s.h
	var g tool.Guard
	if rules := h.access.Load(); rules != nil && c != nil {
		g = rules.For(&tool.Caller{Subject: c.Subject, ClientID: c.ClientID, Issuer: c.Issuer, Scopes: c.Scopes, Claims: c.Claims, Local: c.Local})
	}
	cat := h.catalog
	return console.Catalog{
		Tools:     definitionsOf(func(cur string) ([]json.RawMessage, string, error) { return cat.ListToolsFor(g, cur) }, "name"),
		Prompts:   definitionsOf(func(cur string) ([]json.RawMessage, string, error) { return cat.ListPromptsFor(g, cur) }, "name"),
		Resources: definitionsOf(func(cur string) ([]json.RawMessage, string, error) { return cat.ListResourcesFor(g, cur) }, "uri"),
		Templates: definitionsOf(func(cur string) ([]json.RawMessage, string, error) { return cat.ListResourceTemplatesFor(g, cur) }, "uriTemplate"),
	}
}

// maxCatalogPages bounds the pages Catalog reads of one list (the
// catalog's lists are bounded by limits.items; this guards the loop).
const maxCatalogPages = 1000

// definitionsOf reads every page of a list and names each definition by
// its member key (and its description).
func definitionsOf(list func(cursor string) ([]json.RawMessage, string, error), key string) []console.Definition {
	var out []console.Definition
	cursor := ""
	for range maxCatalogPages {
		page, next, err := list(cursor)
		if err != nil {
			break
		}
		for _, raw := range page {
			var d map[string]json.RawMessage
			if json.Unmarshal(raw, &d) != nil {
				continue
			}
			var name, desc string
			_ = json.Unmarshal(d[key], &name)
			_ = json.Unmarshal(d["description"], &desc)
			out = append(out, console.Definition{Name: name, Description: desc})
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return out
}

// Sessions lists the open sessions of every MCP server the host serves
// (stdio's, --http's and tool search's), oldest first.
func (s *consoleSource) Sessions() []console.Session {
	var out []console.Session
	for _, srv := range s.servers() {
		for _, si := range srv.Sessions() {
			out = append(out, console.Session{ID: si.ID, Transport: si.Transport, Protocol: si.Protocol, Client: si.Client,
				Caller: callerName(si.Caller), Started: si.Opened, InFlight: si.InFlight})
		}
	}
	slices.SortStableFunc(out, func(a, b console.Session) int { return a.Started.Compare(b.Started) })
	return out
}

// servers are the MCP servers the host serves.
func (s *consoleSource) servers() []*mcp.Server {
	r := &s.h.reloads
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.servers)
}

// callerName is how a page names a session's caller: its subject, else
// its OAuth client, else "local" (stdio's user is local too) or "".
func callerName(c tool.Caller) string {
	switch {
	case c.Subject != "" && c.Local:
		return c.Subject + " (local)"
	case c.Subject != "":
		return c.Subject
	case c.ClientID != "":
		return "client " + c.ClientID
	case c.Local:
		return "local"
	}
	return ""
}

// Tasks lists the tasks the store keeps, newest first.
func (s *consoleSource) Tasks(ctx context.Context, limit int) ([]console.Task, error) {
	if s.h.tasks == nil {
		return nil, nil
	}
	ts, err := s.h.tasks.List(ctx, limit)
	if err != nil {
		return nil, err
	}
	// A record names its caller by a digest; the open sessions' callers
	// name those they can.
	names := map[string]string{}
	for _, srv := range s.servers() {
		for _, si := range srv.Sessions() {
			names[mcp.CallerKey(&si.Caller)] = callerName(si.Caller)
		}
	}
	out := make([]console.Task, 0, len(ts))
	for _, t := range ts {
		caller := names[t.Caller]
		if caller == "" {
			caller = "key " + t.Caller[:min(len(t.Caller), mcp.IDPrefix)]
		}
		out = append(out, console.Task{ID: taskPrefix(t.ID), Tool: t.Tool, Caller: caller, Status: string(t.Status),
			Replica: t.Owner, Created: t.Created, Updated: t.Updated})
	}
	return out, nil
}

// taskPrefix is as much of a task id as a page shows (as much as of a
// session's, mcp.IDPrefix): a task id is the only key to its result, so
// the whole id never leaves the host.
func taskPrefix(id string) string { return id[:min(len(id), mcp.IDPrefix)] }

// Calls is the calls per tool from the metrics; nil without metrics
// (neither --http nor --metrics-listen).
func (s *consoleSource) Calls() []console.ToolCalls {
	m := s.h.obs.metrics
	if m == nil {
		return nil
	}
	var out []console.ToolCalls
	for _, c := range m.Calls() {
		out = append(out, console.ToolCalls{Tool: c.Tool, Plugin: c.Provider, Calls: c.Calls, Errors: c.Errors, P50: c.P50, P95: c.P95})
	}
	return out
}

// Audit is the audit log's last lines; nil when none is written.
func (s *consoleSource) Audit(n int) []string {
	if a := s.h.obs.audit; a != nil {
		return a.Recent(n)
	}
	return nil
}

// Watch calls changed at each change of a plugin (console_events.go).
func (s *consoleSource) Watch(changed func(console.Event)) (stop func()) {
	return s.h.obs.events.watch(changed)
}

// errNoPlugin is Approve's and Revoke's answer for a name the host does
// not know.
var errNoPlugin = errors.New("no such plugin")

// pluginNamed is the status of the plugin of that name.
func (s *consoleSource) pluginNamed(name string) (manager.PluginStatus, error) {
	for _, st := range s.h.manager.Status() {
		if st.Name == name && st.State != manager.StateRefused {
			return st, nil
		}
	}
	return manager.PluginStatus{}, fmt.Errorf("%w: %s", errNoPlugin, strings.ToValidUTF8(name, "?"))
}
