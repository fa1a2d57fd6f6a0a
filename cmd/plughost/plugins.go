package main

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/manager"
)

// listPlugins loads every plugin in the directory, prints each one's state and
// tools, and exits.
func listPlugins(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugins", flag.ContinueOnError)
	var hf hostFlags
	hf.register(fs)
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

	exposed := h.catalog.Exposed()
	prompts, resources, templates := h.catalog.Prompts(), h.catalog.Resources(), h.catalog.Templates()
	skipped := h.catalog.Skipped()
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	statuses := h.manager.Status()
	if len(statuses) == 0 {
		fmt.Fprintf(stdout, "no plugins in %s\n", h.pluginDir)
	}
	for _, st := range statuses {
		line := fmt.Sprintf("%s\t%s", st.Name, st.State)
		if st.Version != "" {
			line += "\tversion " + st.Version
		}
		if st.State == manager.StateRunning {
			line += "\t" + sandboxSummary(st.Sandbox)
		}
		if st.LastError != "" {
			line += "\t" + st.LastError
		}
		fmt.Fprintln(w, line)
		if st.Renamed != "" {
			fmt.Fprintf(w, "  (%s)\n", st.Renamed)
		}
		if st.State == manager.StateRefused {
			continue // the tools below are those of the plugin that has the name
		}
		for _, e := range exposed {
			if e.Provider == st.Name {
				fmt.Fprintf(w, "  %s\t%s\n", e.ExposedName, firstLine(e.Description))
			}
		}
		for _, e := range prompts {
			if e.Provider == st.Name {
				fmt.Fprintf(w, "  prompt %s\t%s\n", e.ExposedName, firstLine(e.Description))
			}
		}
		for _, e := range resources {
			if e.Provider == st.Name {
				fmt.Fprintf(w, "  resource %s\t%s\n", e.URI, firstLine(e.Description))
			}
		}
		for _, e := range templates {
			if e.Provider == st.Name {
				fmt.Fprintf(w, "  resource template %s\t%s\n", e.URITemplate, firstLine(e.Description))
			}
		}
		for _, sk := range skipped {
			if sk.Provider != st.Name {
				continue
			}
			if sk.Kind == catalog.KindTool {
				fmt.Fprintf(w, "  %q not served\t%s\n", sk.Name, sk.Reason)
			} else {
				fmt.Fprintf(w, "  %s %q not served\t%s\n", sk.Kind, sk.Name, sk.Reason)
			}
		}
	}
	return w.Flush()
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
