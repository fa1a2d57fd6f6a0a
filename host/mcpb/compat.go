package mcpb

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// Host is what a bundle's compatibility is checked against.
type Host struct {
	// Platform is Node's name of the operating system (Platform).
	Platform string
	// Node and Python are the versions of the interpreters the sandbox
	// runs ("22.1.0", "3.11.7"); "" when there is none.
	Node, Python string
}

// Platform is Node's name (process.platform, which manifests use) of a
// GOOS: darwin, linux, win32.
func Platform(goos string) string {
	if goos == "windows" {
		return "win32"
	}
	return goos
}

// RuntimesOf is c's runtimes; nil for a nil c.
func (c *Compatibility) RuntimesOf() map[string]string {
	if c == nil {
		return nil
	}
	return c.Runtimes
}

// Compatible reports why the bundle cannot run on h: a platform it does
// not list, or a node or python version out of its range (checked when
// the bundle's server runs on that interpreter, or h has it). The Claude
// Desktop version range is not plughost's and is ignored.
func (m *Manifest) Compatible(h Host) error {
	c := m.Compatibility
	if c == nil {
		return nil
	}
	if len(c.Platforms) > 0 && !slices.Contains(c.Platforms, h.Platform) {
		return fmt.Errorf("the bundle runs on %s only, and this host is %s", strings.Join(c.Platforms, ", "), h.Platform)
	}
	for _, rt := range []struct{ name, have, server string }{{"node", h.Node, TypeNode}, {"python", h.Python, TypePython}} {
		want, ok := c.Runtimes[rt.name]
		if !ok || want == "" {
			continue
		}
		if rt.have == "" {
			if m.Server.Type == rt.server {
				return fmt.Errorf("the bundle needs %s %s, and the sandbox has no %s", rt.name, want, rt.name)
			}
			continue
		}
		in, err := InRange(rt.have, want)
		if err != nil {
			return fmt.Errorf("compatibility.runtimes.%s: %w", rt.name, err)
		}
		if !in {
			return fmt.Errorf("the bundle needs %s %s, and the sandbox's is %s", rt.name, want, rt.have)
		}
	}
	return nil
}

// InRange reports whether version is in the npm-style range r:
// alternatives joined by "||", each comparators joined by spaces
// (>=, >, <=, <, =, a bare version, ^, ~, x and * wildcards, partial
// versions such as "18" or "3.10", and "A - B").
func InRange(version, r string) (bool, error) {
	v := "v" + strings.TrimPrefix(strings.TrimSpace(version), "v")
	if !semver.IsValid(v) {
		return false, fmt.Errorf("%q is not a version", version)
	}
	for _, alt := range strings.Split(r, "||") {
		fields := strings.Fields(alt)
		if len(fields) == 3 && fields[1] == "-" { // A - B
			fields = []string{">=" + fields[0], "<=" + fields[2]}
		}
		ok := true
		for i := 0; i < len(fields); i++ {
			f := fields[i]
			if (f == ">=" || f == ">" || f == "<=" || f == "<" || f == "=" || f == "^" || f == "~") && i+1 < len(fields) {
				f += fields[i+1] // ">= 18"
				i++
			}
			in, err := satisfies(v, f)
			if err != nil {
				return false, fmt.Errorf("range %q: %w", r, err)
			}
			ok = ok && in
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// satisfies reports whether v (a valid "v1.2.3") meets one comparator.
func satisfies(v, c string) (bool, error) {
	op := ""
	for _, o := range []string{">=", "<=", ">", "<", "=", "^", "~"} {
		if rest, ok := strings.CutPrefix(c, o); ok {
			op, c = o, rest
			break
		}
	}
	parts, err := partial(c)
	if err != nil {
		return false, err
	}
	if len(parts) == 0 { // * or x
		return true, nil
	}
	lo := version(parts)
	cmpLo := semver.Compare(v, lo)
	switch op {
	case ">=":
		return cmpLo >= 0, nil
	case ">":
		if len(parts) < 3 { // >1.2 means >=1.3.0
			return semver.Compare(v, bump(parts, len(parts)-1)) >= 0, nil
		}
		return cmpLo > 0, nil
	case "<":
		return cmpLo < 0, nil
	case "<=":
		if len(parts) < 3 { // <=1.2 means <1.3.0
			return semver.Compare(v, bump(parts, len(parts)-1)) < 0, nil
		}
		return cmpLo <= 0, nil
	case "^":
		i := 0 // the first non-zero part, or the last given
		for i < len(parts)-1 && parts[i] == 0 {
			i++
		}
		return cmpLo >= 0 && semver.Compare(v, bump(parts, i)) < 0, nil
	case "~":
		i := min(1, len(parts)-1)
		return cmpLo >= 0 && semver.Compare(v, bump(parts, i)) < 0, nil
	}
	// = or bare: exact, or within a partial version
	if len(parts) == 3 {
		return cmpLo == 0, nil
	}
	return cmpLo >= 0 && semver.Compare(v, bump(parts, len(parts)-1)) < 0, nil
}

// partial parses "1", "1.2", "1.2.3", "1.x", "*" (a leading v allowed;
// a pre-release or build suffix dropped) into its given numbers.
func partial(s string) ([]int, error) {
	s = strings.TrimPrefix(s, "v")
	if i := strings.IndexAny(s, "-+"); i > 0 {
		s = s[:i]
	}
	var out []int
	for _, p := range strings.Split(s, ".") {
		if p == "x" || p == "X" || p == "*" {
			break
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || len(out) == 3 {
			return nil, fmt.Errorf("%q is not a version", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// version is "vA.B.C" of parts, missing ones zero.
func version(parts []int) string {
	p := append(append([]int{}, parts...), 0, 0, 0)[:3]
	return fmt.Sprintf("v%d.%d.%d", p[0], p[1], p[2])
}

// bump is the version after the range parts[:i+1] covers: part i plus
// one, the following zero.
func bump(parts []int, i int) string {
	p := append(append([]int{}, parts...), 0, 0, 0)[:3]
	p[i]++
	for j := i + 1; j < 3; j++ {
		p[j] = 0
	}
	return fmt.Sprintf("v%d.%d.%d", p[0], p[1], p[2])
}
