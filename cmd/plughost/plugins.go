package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/internal/texttable"
)

// listPlugins loads every plugin in the directory, prints each one's state,
// what it offers and what the host refused, and exits: status 1 when a
// plugin failed or anything was refused, so that it can serve as a check.
func listPlugins(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugins", flag.ContinueOnError)
	var hf serve.Options
	registerHost(fs, &hf)
	asJSON := fs.Bool("json", false, "print the plugins, their state or error, what they offer and what was refused as JSON")
	diff := fs.String("diff", "", "print each definition of plugin `NAME` held back: word by word how it differs from the approved one, or as listed when a hook flagged it")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fs, "unexpected argument %q", fs.Arg(0))
	}
	h, err := serve.Start(&hf, stderr)
	if err != nil {
		return err
	}
	defer h.Stop()
	<-h.Manager().Ready()

	r := h.Report()
	if *diff != "" {
		for _, p := range r.Plugins {
			if p.Name == *diff {
				return printDiff(stdout, p.Name, p.Held)
			}
		}
		return fmt.Errorf("%w %q in %s", manager.ErrNoPlugin, *diff, h.PluginDir())
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else if err := printReport(stdout, r); err != nil {
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

// print writes the report for a person: a table of the plugins, each with
// what it offers, then what was refused and why, and a failed plugin's
// error and stderr.
func printReport(w io.Writer, r *serve.Report) error {
	var t texttable.Table
	if len(r.Plugins) == 0 {
		t.Text("no plugins in %s", r.Dir)
	}
	for _, p := range r.Plugins {
		cells := []string{p.Name, p.State}
		if p.Version != "" {
			cells = append(cells, "version "+p.Version)
		}
		if p.Contract != 0 {
			cells = append(cells, fmt.Sprintf("contract %d", p.Contract))
		}
		if p.State == string(manager.StateRunning) {
			cells = append(cells, sandboxSummary(p.Sandbox))
			if s := storageSummary(p.Storage); s != "" {
				cells = append(cells, s)
			}
		}
		if p.Trust != nil && p.Trust.Reason != "" {
			cells = append(cells, p.Trust.Reason)
		}
		errText := p.Error
		errLines := strings.Split(errText, "\n")
		if errText != "" {
			cells = append(cells, errLines[0])
		}
		t.Row(cells...)
		for _, l := range errLines[1:] {
			t.Text("      %s", l)
		}
		if p.Stderr != "" {
			t.Text("    stderr of %s:", p.Name)
			for _, l := range strings.Split(p.Stderr, "\n") {
				t.Text("      %s", l)
			}
		}
		if p.NextStep != "" {
			t.Text("    next step: %s", p.NextStep)
		}
		if p.Renamed != "" {
			t.Text("  (%s)", p.Renamed)
		}
		if p.Declared != "" {
			t.Text("  (declared server: %s)", p.Declared)
		}
		if pk := p.Package; pk != nil {
			t.Text("  package: %s (installed %s)", pk.Summary, pk.InstalledAt.Local().Format(time.DateOnly))
		}
		printTrust(&t, &p)
		for _, hd := range p.Held {
			t.Text("  %s (plughost plugins --diff %s)", hd.Line(), p.Name)
		}
		for _, e := range p.Tools {
			t.Row("  "+e.ExposedName, firstLine(e.Description))
		}
		for _, e := range p.Prompts {
			t.Row("  prompt "+e.ExposedName, firstLine(e.Description))
		}
		for _, e := range p.Resources {
			t.Row("  resource "+e.URI, firstLine(e.Description))
		}
		for _, e := range p.Templates {
			t.Row("  resource template "+e.URITemplate, firstLine(e.Description))
		}
		for _, o := range p.Overridden {
			for _, m := range o.Members {
				was := "the plugin has none"
				if m.Plugin != "" {
					was = fmt.Sprintf("the plugin's: %q", m.Plugin)
				}
				t.Text("  overridden: %s %s %s: %q (%s)", o.Kind, o.Name, m.Member, m.Operator, was)
			}
		}
		for _, h := range p.Hidden {
			t.Text("  hidden by the configuration: %s", h)
		}
		for _, rf := range p.Refused {
			what := fmt.Sprintf("%s %q", rf.Kind, rf.Name)
			if rf.Name == "" {
				what = rf.Kind + " without a name"
			}
			lines := strings.Split(rf.Reason, "\n")
			t.Text("  REFUSED %s: %s", what, lines[0])
			for _, l := range lines[1:] {
				t.Text("      %s", l)
			}
		}
	}
	return t.Write(w)
}

// printTrust writes a plugin's trust lines: its mode, state and digest
// (and signer), then what it asks for and what of it is not granted.
func printTrust(t *texttable.Table, p *serve.PluginReport) {
	if v := p.Trust; v != nil {
		line := fmt.Sprintf("  trust: %s, %s, %s", v.Mode, v.State, v.Digest)
		if v.Signer != "" {
			line += ", signed by " + v.Signer
		}
		t.Text("%s", line)
	}
	switch {
	case p.Requests != nil:
		t.Text("  asks for: %s", p.Requests)
	case p.State == string(manager.StateQuarantined) && p.Declared == "":
		t.Text("  asks for: unknown until it has run (a binary says so when it starts)")
	}
	if p.NotGranted != nil {
		t.Text("  NOT GRANTED (it runs without): %s", p.NotGranted)
	}
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// printDiff writes plughost plugins --diff NAME: each held definition of
// the plugin with, member by member, its words removed [-…-] and added
// {+…+} since its approval.
func printDiff(w io.Writer, name string, held []trust.HeldDefinition) error {
	if len(held) == 0 {
		_, err := fmt.Fprintf(w, "nothing of %s is held back\n", name)
		return err
	}
	approvable := false
	for _, h := range held {
		if _, err := fmt.Fprintf(w, "%s\n", h.Line()); err != nil {
			return err
		}
		for _, l := range h.Diff() {
			if _, err := fmt.Fprintf(w, "  %s\n", l); err != nil {
				return err
			}
		}
		approvable = approvable || h.State != trust.HeldFlagged
	}
	if !approvable { // an approval does not serve what a hook flagged
		_, err := fmt.Fprintf(w, "a flagged definition is served once the hooks pass it\n")
		return err
	}
	_, err := fmt.Fprintf(w, "approve them with: plughost approve %s\n", name)
	return err
}

// storageSummary is a running plugin's use of its storage limits: "data
// 1.2 MiB of 1 GiB, tmp 0 B of 64 MiB"; "" when none is known.
func storageSummary(st []manager.Storage) string {
	var parts []string
	for _, s := range st {
		used := "unknown"
		if s.Used >= 0 {
			used = byteSize(s.Used)
		}
		parts = append(parts, fmt.Sprintf("%s %s of %s", s.Name, used, byteSize(s.Limit)))
	}
	return strings.Join(parts, ", ")
}

// byteSize writes n bytes in the largest binary unit that keeps a whole
// number before the point: "512 B", "1.5 KiB", "64 MiB", "1 GiB".
func byteSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, i := float64(n), 0
	for ; f >= 1024 && i < len(units)-1; i++ {
		f /= 1024
	}
	s := strconv.FormatFloat(f, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " " + units[i]
}
