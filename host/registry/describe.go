package registry

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Describe prints what the plan is about to run or reach, before
// anything is written: the server, the package and its version, the
// runtime and arguments, the environment variables and headers (a
// secret one's value never printed), the remote, and the other ways
// the server offers (others, from Choose).
func (p *Plan) Describe(w io.Writer, others []string) {
	s := p.Server
	fmt.Fprintf(w, "%s %s", s.Name, s.Version)
	if s.Title != "" {
		fmt.Fprintf(w, " (%s)", s.Title)
	}
	fmt.Fprintf(w, ": %s\n", s.Description)
	if s.Repository != nil && s.Repository.URL != "" {
		fmt.Fprintf(w, "  source:    %s\n", s.Repository.URL)
	}
	switch {
	case p.BundleURL != "":
		fmt.Fprintf(w, "  bundle:    %s\n  sha256:    %s (checked before anything is unpacked)\n", p.BundleURL, p.BundleSHA256)
	case p.URL != "":
		fmt.Fprintf(w, "  remote:    %s (%s)\n", p.URL, p.Choice.Remote.Type)
		p.values(w, "header:   ", p.Headers)
	default:
		pkg := p.Choice.Package
		fmt.Fprintf(w, "  package:   %s %s %s", pkg.RegistryType, pkg.Identifier, pkg.Version)
		if pkg.RegistryBaseURL != "" {
			fmt.Fprintf(w, " from %s", pkg.RegistryBaseURL)
		}
		fmt.Fprintf(w, "\n  installed: once, now, into plughost's package cache (later starts run offline)\n")
		fmt.Fprintf(w, "  runs:      %s %s\n", p.Command, strings.Join(p.Args, " "))
		p.values(w, "env:      ", p.Env)
	}
	for _, o := range others {
		fmt.Fprintf(w, "  also offered: %s\n", o)
	}
}

func (p *Plan) values(w io.Writer, label string, m map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if slices.Contains(p.Secrets, k) {
			fmt.Fprintf(w, "  %s %s = (secret: kept in a file of mode 0600, not in the declaration)\n", label, k)
			continue
		}
		fmt.Fprintf(w, "  %s %s = %s\n", label, k, m[k])
	}
}
