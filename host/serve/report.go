package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/pluginproto"
)

// Report is what `plughost plugins` prints; its JSON form is --json's:
// each plugin of a host whose plugins are ready (Host.Report), what it
// offers and what was refused, failed or held back.
type Report struct {
	Dir string `json:"dir"`
	// OK is true when every plugin loaded and nothing was refused,
	// quarantined or held.
	OK bool `json:"ok"`
	// Failed counts the plugins that failed; Refused the definitions
	// refused; Quarantined the plugins the trust check holds back; Held
	// the definitions held back (changed since approval, or new).
	Failed      int            `json:"failed"`
	Refused     int            `json:"refused"`
	Quarantined int            `json:"quarantined"`
	Held        int            `json:"held"`
	Plugins     []PluginReport `json:"plugins"`
}

type PluginReport struct {
	Name string `json:"name"`
	File string `json:"file"`
	// State is the manager's: running, failed, refused (another file has
	// the name), restarting, parked...
	State string `json:"state"`
	// Failed is true when the plugin is not running or its last start or
	// run ended in Error.
	Failed  bool   `json:"failed"`
	Version string `json:"version,omitempty"`
	// Contract is the plugin contract version the plugin speaks (0: not
	// known yet); `plughost version` names the ones this host loads.
	Contract uint32   `json:"contract,omitempty"`
	Renamed  string   `json:"renamed,omitempty"`
	Sandbox  []string `json:"sandbox,omitempty"`
	// Storage is what a running plugin holds of its storage limits: its
	// data directory and its tmp, used and limit in bytes.
	Storage []manager.Storage `json:"storage,omitempty"`
	// Declared says what a declared MCP server (File is its NAME.mcp.json)
	// runs or reaches: its command and arguments, or its URL. Its env
	// values and headers are not shown: they may hold secrets.
	Declared string `json:"declared,omitempty"`
	// Package is the package a declared server's package runner one-liner
	// (npx -y PKG, uvx PKG) installed and runs, once installed.
	Package *PackageReport `json:"package,omitempty"`
	Error   string         `json:"error,omitempty"`
	// Stderr is the excerpt of the plugin's stderr that goes with Error:
	// a declared server's last lines, a binary's head and tail.
	Stderr string `json:"stderr,omitempty"`
	// NextStep is the one thing to do about Error (a grant to add, a
	// variable to set, a limit to raise; package diagnose), when known.
	NextStep string `json:"nextStep,omitempty"`
	// Trust is the plugin's trust check, when a trust mode other than
	// open applies: its mode, state, digest, signer and, when
	// quarantined, why.
	Trust *TrustReport `json:"trust,omitempty"`
	// Requests is what the plugin asks to be granted; NotGranted what of
	// it its sandbox policy does not grant (it runs without it).
	Requests   *pluginproto.Requests `json:"requests,omitempty"`
	NotGranted *pluginproto.Requests `json:"notGranted,omitempty"`
	// Held lists the definitions held back (trust mode pinned or signed:
	// changed since approval, or never approved), by this command's host
	// or by a serving one (its held file).
	Held      []trust.HeldDefinition `json:"held,omitempty"`
	Tools     []OfferReport          `json:"tools"`
	Prompts   []OfferReport          `json:"prompts"`
	Resources []ResourceReport       `json:"resources"`
	Templates []TemplateReport       `json:"resourceTemplates"`
	Refused   []RefusalReport        `json:"refused"`
	// Hidden names what the plugin offers that the configuration's
	// plugins { plugin "NAME" { tools/prompts/resources } } lists hide
	// ("tool get_secret").
	Hidden []string `json:"hidden,omitempty"`
	// Overridden lists what the operator's override blocks change of
	// what the plugin offers, beside the plugin's text (the served text
	// is the operator's).
	Overridden []OverrideReport `json:"overridden,omitempty"`
}

// OverrideReport is a definition the operator's overrides change.
type OverrideReport struct {
	Kind    string           `json:"kind"`
	Name    string           `json:"name"`
	Members []OverrideMember `json:"members"`
}

// OverrideMember is one member an override sets: the plugin's value and
// the operator's, as text (a string as it is, anything else as JSON;
// "" when the plugin has none).
type OverrideMember struct {
	Member   string `json:"member"`
	Plugin   string `json:"plugin"`
	Operator string `json:"operator"`
}

// TrustReport is a plugin's trust check (trust.Verdict).
type TrustReport struct {
	Mode   string `json:"mode"`
	State  string `json:"state"`
	Digest string `json:"digest,omitempty"`
	Signer string `json:"signer,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// PackageReport is the installed package of a declared server
// (packages.Installed).
type PackageReport struct {
	Manager string `json:"manager"` // npm, pip
	Name    string `json:"name"`
	Version string `json:"version"` // the exact version installed
	// Declared is the version or range the declaration asks for ("" for
	// the newest).
	Declared    string    `json:"declared,omitempty"`
	InstalledAt time.Time `json:"installedAt"`
	Tree        string    `json:"tree"`
	// Summary is "@acme/notes-mcp@1.2.3", "notes-mcp==1.2.3".
	Summary string `json:"summary"`
}

// OfferReport is a tool or a prompt.
type OfferReport struct {
	Name        string `json:"name"`        // the plugin's own
	ExposedName string `json:"exposedName"` // the one clients see
	Description string `json:"description,omitempty"`
}

type ResourceReport struct {
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

type TemplateReport struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// RefusalReport is a definition the host does not serve.
type RefusalReport struct {
	Kind   string `json:"kind"` // tool, resource, resource template, prompt
	Name   string `json:"name"` // its name, URI or URI template ("" when it has none)
	Reason string `json:"reason"`
}

// failedPlugin reports whether a plugin's status is a failure.
func failedPlugin(st manager.PluginStatus) bool {
	return (st.State != manager.StateRunning && st.State != manager.StateIdle && st.State != manager.StateQuarantined) || st.LastError != ""
}

// Report gathers the report of a host whose plugins are ready.
func (h *Host) Report() *Report {
	exposed := h.catalog.Exposed()
	prompts, resources, templates := h.catalog.Prompts(), h.catalog.Resources(), h.catalog.Templates()
	skipped := h.catalog.Skipped()
	r := &Report{Dir: h.pluginDir, Plugins: []PluginReport{}}
	var held string
	if h.trust.Uses(config.TrustPinned) || h.trust.Uses(config.TrustSigned) {
		held, _ = heldDir(&config.Config{Trust: h.trust}) // no directory: no held files to read
	}
	for _, st := range h.manager.Status() {
		p := PluginReport{Name: st.Name, File: st.Path, State: string(st.State), Failed: failedPlugin(st), Version: st.Version, Contract: st.Contract,
			Renamed: st.Renamed, Sandbox: st.Sandbox, Storage: st.Storage, Error: st.LastError, Stderr: st.LastStderr, NextStep: st.NextStep,
			Tools: []OfferReport{}, Prompts: []OfferReport{}, Resources: []ResourceReport{}, Templates: []TemplateReport{},
			Refused: []RefusalReport{}, Declared: declaredSummary(st.Path), Hidden: st.Hidden}
		if in := installedPackage(st.Name, st.Path); in != nil {
			p.Package = &PackageReport{Manager: in.Manager, Name: in.Name, Version: in.Version, Declared: in.Declared,
				InstalledAt: in.InstalledAt, Tree: in.Tree, Summary: in.String()}
		}
		if p.Failed {
			r.Failed++
		}
		if v := st.Trust; v.Mode != "" && v.Mode != trust.ModeOpen {
			p.Trust = &TrustReport{Mode: string(v.Mode), State: string(v.State), Digest: v.Digest, Signer: v.Signer, Reason: v.Reason}
		}
		if !st.Requests.Empty() {
			p.Requests = &st.Requests
		}
		if !st.Denied.Empty() {
			p.NotGranted = &st.Denied
		}
		p.Held = heldOf(held, st)
		p.Overridden = overrideReports(st.Overridden)
		r.Held += len(p.Held)
		if st.State == manager.StateQuarantined {
			r.Quarantined++
			r.Plugins = append(r.Plugins, p) // it offers nothing: it does not run
			continue
		}
		if st.State == manager.StateRefused {
			// What is listed under the name is the plugin's that has it.
			r.Plugins = append(r.Plugins, p)
			continue
		}
		for _, e := range exposed {
			if e.Provider == st.Name {
				p.Tools = append(p.Tools, OfferReport{e.Tool, e.ExposedName, e.Description})
			}
		}
		for _, e := range prompts {
			if e.Provider == st.Name {
				p.Prompts = append(p.Prompts, OfferReport{e.Prompt, e.ExposedName, e.Description})
			}
		}
		for _, e := range resources {
			if e.Provider == st.Name {
				p.Resources = append(p.Resources, ResourceReport{e.URI, e.Name, e.Description})
			}
		}
		for _, e := range templates {
			if e.Provider == st.Name {
				p.Templates = append(p.Templates, TemplateReport{e.URITemplate, e.Name, e.Description})
			}
		}
		for _, kind := range []catalog.Kind{catalog.KindTool, catalog.KindResource, catalog.KindTemplate, catalog.KindPrompt} {
			for _, rf := range st.Refused { // dropped by the manager: no name, or listed twice
				if rf.Kind == string(kind) {
					p.Refused = append(p.Refused, RefusalReport{rf.Kind, rf.Name, rf.Reason})
				}
			}
			for _, sk := range skipped { // refused by the catalog
				if sk.Provider == st.Name && sk.Kind == kind {
					p.Refused = append(p.Refused, RefusalReport{string(sk.Kind), sk.Name, sk.Reason})
				}
			}
		}
		r.Refused += len(p.Refused)
		r.Plugins = append(r.Plugins, p)
	}
	r.OK = r.Failed == 0 && r.Refused == 0 && r.Quarantined == 0 && r.Held == 0
	return r
}

// declaredSummary says what the declared server at path runs or reaches
// ("" when path is not a declaration, or does not parse: its load error
// says why). Env values, headers and a URL's query stay out: they may hold
// secrets.
func declaredSummary(path string) string {
	if _, ok := declared.Name(filepath.Base(path)); !ok {
		return ""
	}
	s, err := declared.Load(path)
	switch {
	case err != nil:
		return ""
	case s.Remote():
		u, err := url.Parse(s.URL)
		if err != nil {
			return s.Type
		}
		u.User, u.RawQuery, u.Fragment = nil, "", "" // an API key may ride in them
		return s.Type + " " + u.String()
	case s.Bundle != "":
		return "bundle " + BundlePath(path, s)
	}
	return strings.Join(append([]string{s.Command}, s.Args...), " ")
}

// UnknownTool explains why no tool is named name, as plughost call says
// it: the plugin offers it but the host refused it, or a plugin failed to
// load (naming each, with its error), or no plugin offers it; with the
// tools there are.
func (h *Host) UnknownTool(name string) error {
	r := h.Report()
	for _, p := range r.Plugins {
		for _, rf := range p.Refused {
			if rf.Kind == string(catalog.KindTool) && rf.Name != "" && (rf.Name == name || p.Name+"__"+rf.Name == name) {
				return fmt.Errorf("tool %q of plugin %s is not served: %s", rf.Name, p.Name, rf.Reason)
			}
		}
	}
	var names []string
	for _, e := range h.catalog.Exposed() {
		names = append(names, e.ExposedName)
	}
	available := strings.Join(names, ", ")
	if available == "" {
		available = "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "no tool named %q; available: %s", name, available)
	for _, p := range r.Plugins {
		if p.Trust != nil && p.State == string(manager.StateQuarantined) {
			fmt.Fprintf(&b, "\nplugin %s is quarantined, and its tools are missing: %s", p.Name, p.Trust.Reason)
		}
		if !p.Failed {
			continue
		}
		errText := p.Error
		if errText == "" {
			errText = "it is " + p.State
		}
		fmt.Fprintf(&b, "\nplugin %s failed, and its tools are missing:\n%s", p.Name, indent(errText, "  "))
		if p.Stderr != "" {
			fmt.Fprintf(&b, "\n  stderr:\n%s", indent(p.Stderr, "    "))
		}
		if p.NextStep != "" {
			fmt.Fprintf(&b, "\n  next step: %s", p.NextStep)
		}
	}
	return errors.New(b.String())
}

// indent prefixes each line of s, without trailing blanks.
func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(prefix+l, " ")
	}
	return strings.Join(lines, "\n")
}

// overrideReports is what the manager says the overrides changed, member
// by member.
func overrideReports(os []manager.Overridden) []OverrideReport {
	var out []OverrideReport
	for _, o := range os {
		r := OverrideReport{Kind: o.Kind, Name: o.Name}
		for _, m := range o.Members {
			r.Members = append(r.Members, OverrideMember{Member: m, Plugin: memberText(o.Plugin, m), Operator: memberText(o.Served, m)})
		}
		out = append(out, r)
	}
	return out
}

// memberText is member of the JSON object def ("annotations.NAME": one
// of its annotations) as text: a string as it is, anything else as JSON;
// "" when def has none.
func memberText(def json.RawMessage, member string) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(def, &m)
	raw := m[member]
	if name, ok := strings.CutPrefix(member, "annotations."); ok {
		var a map[string]json.RawMessage
		_ = json.Unmarshal(m["annotations"], &a)
		raw = a[name]
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	return string(raw)
}
