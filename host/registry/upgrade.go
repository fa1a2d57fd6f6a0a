package registry

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/plughost/plughost/host/declared"
)

// Upgrade returns the declaration d, which plughost install wrote for
// the server old (d.Origin says which of its packages or remotes), made
// to run next, a later version of it: the package reference among its
// arguments (PKG@OLD, PKG==OLD) becomes the new version's, and its
// origin's version next's. The values the user gave are kept, so next
// must ask for the same ones (arguments, variables, headers, a remote's
// URL): when it does not, the error says to install it again. An mcpb
// package's identifier is its download URL, another for each version:
// the declaration is returned with only its origin changed, and the
// caller downloads next's bundle, checks it, and names it (Bundle,
// BundleSHA256).
func Upgrade(d *declared.Server, old, next *Server) (*declared.Server, error) {
	if d.Origin == nil {
		return nil, fmt.Errorf("not installed from a registry (no origin)")
	}
	typ := d.Origin.Type
	oc, _, err := Choose(old, typ)
	if err != nil {
		return nil, fmt.Errorf("the installed version: %w", err)
	}
	nc, _, err := Choose(next, typ)
	if err != nil {
		return nil, fmt.Errorf("the new version: %w", err)
	}
	reinstall := fmt.Sprintf("; install it again: plughost install --force %s@%s", next.Name, next.Version)
	if inputsOf(oc) != inputsOf(nc) {
		return nil, fmt.Errorf("%s %s asks for other values than %s did%s", next.Name, next.Version, old.Version, reinstall)
	}
	u := *d
	origin := *d.Origin
	origin.Version = next.Version
	u.Origin = &origin
	if oc.Remote != nil {
		return &u, nil // same URL template and headers: the declaration stands
	}
	op, np := oc.Package, nc.Package
	if op.RegistryType == TypeMCPB && np.RegistryType == TypeMCPB {
		return &u, nil
	}
	if op.Identifier != np.Identifier || op.RuntimeHint != np.RuntimeHint {
		return nil, fmt.Errorf("%s %s is another package (%s) than %s's (%s)%s", next.Name, next.Version, np.Identifier, old.Version, op.Identifier, reinstall)
	}
	sep := "@"
	if op.RegistryType == TypePyPI {
		sep = "=="
	}
	i := slices.Index(d.Args, op.Identifier+sep+op.Version)
	if i < 0 {
		return nil, fmt.Errorf("its declaration does not run %s%s%s as installed%s", op.Identifier, sep, op.Version, reinstall)
	}
	u.Args = slices.Clone(d.Args)
	u.Args[i] = np.Identifier + sep + np.Version
	return &u, nil
}

// inputsOf is what a choice asks for, descriptions aside, to compare two
// versions' with.
func inputsOf(c *Choice) string {
	strip := func(in Input) Input {
		in.Description, in.Placeholder = "", ""
		in.Variables = maps.Clone(in.Variables)
		for k, v := range in.Variables {
			v.Description, v.Placeholder = "", ""
			in.Variables[k] = v
		}
		return in
	}
	var v any
	if c.Remote != nil {
		r := *c.Remote
		r.Headers = slices.Clone(r.Headers)
		for i := range r.Headers {
			r.Headers[i].Input = strip(r.Headers[i].Input)
		}
		v = r
	} else {
		p := *c.Package
		p.Identifier, p.Version, p.FileSHA256 = "", "", ""
		for _, list := range []*[]Argument{&p.RuntimeArguments, &p.PackageArguments} {
			*list = slices.Clone(*list)
			for i := range *list {
				(*list)[i].Input = strip((*list)[i].Input)
			}
		}
		p.EnvironmentVariables = slices.Clone(p.EnvironmentVariables)
		for i := range p.EnvironmentVariables {
			p.EnvironmentVariables[i].Input = strip(p.EnvironmentVariables[i].Input)
		}
		v = p
	}
	b, _ := json.Marshal(v)
	return string(b)
}
