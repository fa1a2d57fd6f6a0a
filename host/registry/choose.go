package registry

import (
	"fmt"
	"slices"
	"strings"
)

// Choice is the way of running a server install takes: one of its
// packages, or one of its remotes.
type Choice struct {
	Package *Package
	Remote  *Transport
}

// Type is what the choice installs: the package's registryType, or
// the remote's transport.
func (c *Choice) Type() string {
	if c.Package != nil {
		return c.Package.RegistryType
	}
	return c.Remote.Type
}

// String describes the choice: "npm @acme/notes-mcp 1.2.3", "remote
// streamable-http https://…".
func (c *Choice) String() string {
	if c.Package != nil {
		p := c.Package
		return strings.TrimSpace(fmt.Sprintf("%s %s %s", p.RegistryType, p.Identifier, p.Version))
	}
	return "remote " + c.Remote.Type + " " + c.Remote.URL
}

// Options lists every way s offers, in the document's order (packages,
// then remotes), each with why plughost cannot run it ("" when it can).
func Options(s *Server) (choices []Choice, why []string) {
	for i := range s.Packages {
		p := &s.Packages[i]
		choices = append(choices, Choice{Package: p})
		why = append(why, unsupported(p))
	}
	for i := range s.Remotes {
		r := &s.Remotes[i]
		choices = append(choices, Choice{Remote: r})
		w := ""
		if r.Type != TransportHTTP && r.Type != TransportSSE {
			w = fmt.Sprintf("remote transport %q is none of streamable-http and sse", r.Type)
		}
		why = append(why, w)
	}
	return choices, why
}

// unsupported says why plughost cannot run the package p, "" when it
// can.
func unsupported(p *Package) string {
	switch p.RegistryType {
	case TypeNPM, TypePyPI, TypeMCPB:
	case TypeOCI:
		return "an OCI image needs a container runtime, which plughost neither requires nor runs inside its sandbox"
	case TypeNuGet:
		return "a NuGet package needs the .NET SDK's dnx, which plughost does not install packages with"
	default:
		return fmt.Sprintf("registry type %q is not one plughost installs", p.RegistryType)
	}
	if p.RegistryType != TypeMCPB && p.Transport.Type != TransportStdio {
		return fmt.Sprintf("a package serving %s itself (not stdio) is not one plughost runs", p.Transport.Type)
	}
	return ""
}

// Choose picks how to install s: the first way plughost runs in the
// document's order, or with want ("npm", "pypi", "mcpb", "remote",
// "streamable-http", "sse") the first of that type. Its error names
// every way s offers and why none fits. others lists the ways not
// chosen, for the user to see.
func Choose(s *Server, want string) (c *Choice, others []string, err error) {
	choices, why := Options(s)
	if len(choices) == 0 {
		return nil, nil, fmt.Errorf("%s@%s offers neither a package nor a remote", s.Name, s.Version)
	}
	var refused []string
	for i := range choices {
		ch := &choices[i]
		match := want == "" || ch.Type() == want || want == TypeRemote && ch.Remote != nil
		switch {
		case c == nil && match && why[i] == "":
			c = ch
		case why[i] != "":
			refused = append(refused, fmt.Sprintf("%s (%s)", ch, why[i]))
			others = append(others, fmt.Sprintf("%s: not supported: %s", ch, why[i]))
		default:
			others = append(others, ch.String())
		}
	}
	if c != nil {
		return c, others, nil
	}
	types := []string{}
	for _, ch := range choices {
		if !slices.Contains(types, ch.Type()) {
			types = append(types, ch.Type())
		}
	}
	if want != "" && len(refused) < len(choices) {
		return nil, nil, fmt.Errorf("%s@%s offers no %s package or remote plughost runs; it offers %s", s.Name, s.Version, want, strings.Join(types, ", "))
	}
	return nil, nil, fmt.Errorf("%s@%s offers nothing plughost runs: %s", s.Name, s.Version, strings.Join(refused, "; "))
}
