package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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

// listPlugins loads every plugin in the directory, prints each one's state,
// what it offers and what the host refused, and exits: status 1 when a
// plugin failed or anything was refused, so that it can serve as a check.
func listPlugins(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugins", flag.ContinueOnError)
	var hf hostFlags
	hf.register(fs)
	asJSON := fs.Bool("json", false, "print the plugins, their state or error, what they offer and what was refused as JSON")
	diff := fs.String("diff", "", "print, word by word, how each definition of plugin `NAME` held back differs from the approved one")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fs, "unexpected argument %q", fs.Arg(0))
	}
	h, err := startHost(&hf, stderr)
	if err != nil {
		return err
	}
	defer h.stop()
	<-h.manager.Ready()

	r := newReport(h)
	if *diff != "" {
		for _, p := range r.Plugins {
			if p.Name == *diff {
				return printDiff(stdout, p.Name, p.Held)
			}
		}
		return fmt.Errorf("%w %q in %s", manager.ErrNoPlugin, *diff, h.pluginDir)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else if err := r.print(stdout); err != nil {
		return err
	}
	if r.OK {
		return nil
	}
	var what []string
	if r.Failed > 0 {
		what = append(what, plural(r.Failed, "plugin", "plugins")+" failed")
	}
	if r.Refused > 0 {
		what = append(what, plural(r.Refused, "definition", "definitions")+" refused")
	}
	if r.Quarantined > 0 {
		what = append(what, plural(r.Quarantined, "plugin", "plugins")+" quarantined")
	}
	if r.Held > 0 {
		what = append(what, plural(r.Held, "definition", "definitions")+" held")
	}
	return errors.New(strings.Join(what, ", ")) // exit status 1
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// report is what `plughost plugins` prints; its JSON form is --json's.
type report struct {
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
	Plugins     []pluginReport `json:"plugins"`
}

type pluginReport struct {
	Name string `json:"name"`
	File string `json:"file"`
	// State is the manager's: running, failed, refused (another file has
	// the name), restarting, parked...
	State string `json:"state"`
	// Failed is true when the plugin is not running or its last start or
	// run ended in Error.
	Failed  bool     `json:"failed"`
	Version string   `json:"version,omitempty"`
	Renamed string   `json:"renamed,omitempty"`
	Sandbox []string `json:"sandbox,omitempty"`
	// Declared says what a declared MCP server (File is its NAME.mcp.json)
	// runs or reaches: its command and arguments, or its URL. Its env
	// values and headers are not shown: they may hold secrets.
	Declared string `json:"declared,omitempty"`
	// Package is the package a declared server's package runner one-liner
	// (npx -y PKG, uvx PKG) installed and runs, once installed.
	Package *packageReport `json:"package,omitempty"`
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
	Trust *trustReport `json:"trust,omitempty"`
	// Requests is what the plugin asks to be granted; NotGranted what of
	// it its sandbox policy does not grant (it runs without it).
	Requests   *pluginproto.Requests `json:"requests,omitempty"`
	NotGranted *pluginproto.Requests `json:"notGranted,omitempty"`
	// Held lists the definitions held back (trust mode pinned or signed:
	// changed since approval, or never approved), by this command's host
	// or by a serving one (its held file).
	Held      []trust.HeldDefinition `json:"held,omitempty"`
	Tools     []offerReport          `json:"tools"`
	Prompts   []offerReport          `json:"prompts"`
	Resources []resourceReport       `json:"resources"`
	Templates []templateReport       `json:"resourceTemplates"`
	Refused   []refusalReport        `json:"refused"`
	// Hidden names what the plugin offers that the configuration's
	// plugins { plugin "NAME" { tools/prompts/resources } } lists hide
	// ("tool get_secret").
	Hidden []string `json:"hidden,omitempty"`
}

// trustReport is a plugin's trust check (trust.Verdict).
type trustReport struct {
	Mode   string `json:"mode"`
	State  string `json:"state"`
	Digest string `json:"digest,omitempty"`
	Signer string `json:"signer,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// packageReport is the installed package of a declared server
// (packages.Installed).
type packageReport struct {
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

// offerReport is a tool or a prompt.
type offerReport struct {
	Name        string `json:"name"`        // the plugin's own
	ExposedName string `json:"exposedName"` // the one clients see
	Description string `json:"description,omitempty"`
}

type resourceReport struct {
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

type templateReport struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// refusalReport is a definition the host does not serve.
type refusalReport struct {
	Kind   string `json:"kind"` // tool, resource, resource template, prompt
	Name   string `json:"name"` // its name, URI or URI template ("" when it has none)
	Reason string `json:"reason"`
}

// failedPlugin reports whether a plugin's status is a failure.
func failedPlugin(st manager.PluginStatus) bool {
	return (st.State != manager.StateRunning && st.State != manager.StateIdle && st.State != manager.StateQuarantined) || st.LastError != ""
}

// newReport gathers the report of a host whose plugins are ready.
func newReport(h *host) *report {
	exposed := h.catalog.Exposed()
	prompts, resources, templates := h.catalog.Prompts(), h.catalog.Resources(), h.catalog.Templates()
	skipped := h.catalog.Skipped()
	r := &report{Dir: h.pluginDir, Plugins: []pluginReport{}}
	var held string
	if h.trust.Uses(config.TrustPinned) || h.trust.Uses(config.TrustSigned) {
		held, _ = heldDir(&config.Config{Trust: h.trust}) // no directory: no held files to read
	}
	for _, st := range h.manager.Status() {
		p := pluginReport{Name: st.Name, File: st.Path, State: string(st.State), Failed: failedPlugin(st), Version: st.Version,
			Renamed: st.Renamed, Sandbox: st.Sandbox, Error: st.LastError, Stderr: st.LastStderr, NextStep: st.NextStep,
			Tools: []offerReport{}, Prompts: []offerReport{}, Resources: []resourceReport{}, Templates: []templateReport{},
			Refused: []refusalReport{}, Declared: declaredSummary(st.Path), Hidden: st.Hidden}
		if in := installedPackage(st.Name, st.Path); in != nil {
			p.Package = &packageReport{Manager: in.Manager, Name: in.Name, Version: in.Version, Declared: in.Declared,
				InstalledAt: in.InstalledAt, Tree: in.Tree, Summary: in.String()}
		}
		if p.Failed {
			r.Failed++
		}
		if v := st.Trust; v.Mode != "" && v.Mode != trust.ModeOpen {
			p.Trust = &trustReport{Mode: string(v.Mode), State: string(v.State), Digest: v.Digest, Signer: v.Signer, Reason: v.Reason}
		}
		if !st.Requests.Empty() {
			p.Requests = &st.Requests
		}
		if !st.Denied.Empty() {
			p.NotGranted = &st.Denied
		}
		p.Held = heldOf(held, st)
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
				p.Tools = append(p.Tools, offerReport{e.Tool, e.ExposedName, e.Description})
			}
		}
		for _, e := range prompts {
			if e.Provider == st.Name {
				p.Prompts = append(p.Prompts, offerReport{e.Prompt, e.ExposedName, e.Description})
			}
		}
		for _, e := range resources {
			if e.Provider == st.Name {
				p.Resources = append(p.Resources, resourceReport{e.URI, e.Name, e.Description})
			}
		}
		for _, e := range templates {
			if e.Provider == st.Name {
				p.Templates = append(p.Templates, templateReport{e.URITemplate, e.Name, e.Description})
			}
		}
		for _, kind := range []catalog.Kind{catalog.KindTool, catalog.KindResource, catalog.KindTemplate, catalog.KindPrompt} {
			for _, rf := range st.Refused { // dropped by the manager: no name, or listed twice
				if rf.Kind == string(kind) {
					p.Refused = append(p.Refused, refusalReport{rf.Kind, rf.Name, rf.Reason})
				}
			}
			for _, sk := range skipped { // refused by the catalog
				if sk.Provider == st.Name && sk.Kind == kind {
					p.Refused = append(p.Refused, refusalReport{string(sk.Kind), sk.Name, sk.Reason})
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
	}
	return strings.Join(append([]string{s.Command}, s.Args...), " ")
}

// print writes the report for a person: a table of the plugins, each with
// what it offers, then what was refused and why, and a failed plugin's
// error and stderr.
func (r *report) print(w io.Writer) error {
	var t table
	if len(r.Plugins) == 0 {
		t.text("no plugins in %s", r.Dir)
	}
	for _, p := range r.Plugins {
		cells := []string{p.Name, p.State}
		if p.Version != "" {
			cells = append(cells, "version "+p.Version)
		}
		if p.State == string(manager.StateRunning) {
			cells = append(cells, sandboxSummary(p.Sandbox))
		}
		if p.Trust != nil && p.Trust.Reason != "" {
			cells = append(cells, p.Trust.Reason)
		}
		errText := p.Error
		errLines := strings.Split(errText, "\n")
		if errText != "" {
			cells = append(cells, errLines[0])
		}
		t.row(cells...)
		for _, l := range errLines[1:] {
			t.text("      %s", l)
		}
		if p.Stderr != "" {
			t.text("    stderr of %s:", p.Name)
			for _, l := range strings.Split(p.Stderr, "\n") {
				t.text("      %s", l)
			}
		}
		if p.NextStep != "" {
			t.text("    next step: %s", p.NextStep)
		}
		if p.Renamed != "" {
			t.text("  (%s)", p.Renamed)
		}
		if p.Declared != "" {
			t.text("  (declared server: %s)", p.Declared)
		}
		if pk := p.Package; pk != nil {
			t.text("  package: %s (installed %s)", pk.Summary, pk.InstalledAt.Local().Format(time.DateOnly))
		}
		p.printTrust(&t)
		for _, hd := range p.Held {
			t.text("  %s (plughost plugins --diff %s)", hd.Line(), p.Name)
		}
		for _, e := range p.Tools {
			t.row("  "+e.ExposedName, firstLine(e.Description))
		}
		for _, e := range p.Prompts {
			t.row("  prompt "+e.ExposedName, firstLine(e.Description))
		}
		for _, e := range p.Resources {
			t.row("  resource "+e.URI, firstLine(e.Description))
		}
		for _, e := range p.Templates {
			t.row("  resource template "+e.URITemplate, firstLine(e.Description))
		}
		for _, h := range p.Hidden {
			t.text("  hidden by the configuration: %s", h)
		}
		for _, rf := range p.Refused {
			what := fmt.Sprintf("%s %q", rf.Kind, rf.Name)
			if rf.Name == "" {
				what = rf.Kind + " without a name"
			}
			lines := strings.Split(rf.Reason, "\n")
			t.text("  REFUSED %s: %s", what, lines[0])
			for _, l := range lines[1:] {
				t.text("      %s", l)
			}
		}
	}
	return t.write(w)
}

// printTrust writes a plugin's trust lines: its mode, state and digest
// (and signer), then what it asks for and what of it is not granted.
func (p *pluginReport) printTrust(t *table) {
	if v := p.Trust; v != nil {
		line := fmt.Sprintf("  trust: %s, %s, %s", v.Mode, v.State, v.Digest)
		if v.Signer != "" {
			line += ", signed by " + v.Signer
		}
		t.text("%s", line)
	}
	switch {
	case p.Requests != nil:
		t.text("  asks for: %s", p.Requests)
	case p.State == string(manager.StateQuarantined) && p.Declared == "":
		t.text("  asks for: unknown until it has run (a binary says so when it starts)")
	}
	if p.NotGranted != nil {
		t.text("  NOT GRANTED (it runs without): %s", p.NotGranted)
	}
}

// table is text/tabwriter's alignment for rows of cells among lines of
// free text that must not break it: a column is as wide as its widest cell
// that is not the last of its row.
type table struct {
	lines []tableLine
}

type tableLine struct {
	cells []string // a row; nil for text
	text  string
}

func (t *table) row(cells ...string) { t.lines = append(t.lines, tableLine{cells: cells}) }

func (t *table) text(format string, args ...any) {
	t.lines = append(t.lines, tableLine{text: fmt.Sprintf(format, args...)})
}

func (t *table) write(w io.Writer) error {
	var widths []int
	for _, l := range t.lines {
		for i, c := range l.cells[:max(len(l.cells)-1, 0)] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for _, l := range t.lines {
		if l.cells == nil {
			b.WriteString(strings.TrimRight(l.text, " "))
			b.WriteByte('\n')
			continue
		}
		var line strings.Builder
		for i, c := range l.cells {
			line.WriteString(c)
			if i < len(l.cells)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))+2))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
