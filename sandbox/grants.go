package sandbox

import (
	"encoding/json"
	"slices"

	"github.com/plughost/plughost/grants"
)

// Dir is a directory granted to a plugin under a name it asks for.
type Dir struct {
	Name  string
	Path  string
	Write bool
}

// validDirName reports whether s may name a granted directory.
func validDirName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// granted returns a copy of p with its named directories added to its
// read and write paths and grants.Env to its environment, and the value of
// grants.Env for plugin (what the plugin reads back: package grants).
func (p *Policy) granted(plugin string) (*Policy, string) {
	c := p.Clone()
	g := grants.Grants{Plugin: plugin, Dirs: map[string]grants.Dir{}, AllowNet: string(p.net()), NetAllow: slices.Clone(p.NetAllow), Env: slices.Clone(p.Env)}
	for _, d := range p.Dirs {
		g.Dirs[d.Name] = grants.Dir{Path: d.Path, Write: d.Write}
		if d.Write {
			c.AllowWrite = append(c.AllowWrite, d.Path)
		} else {
			c.AllowRead = append(c.AllowRead, d.Path)
		}
	}
	g.AllowRead, g.AllowWrite = slices.Clone(c.AllowRead), slices.Clone(c.AllowWrite)
	for _, l := range []*[]string{&g.AllowRead, &g.AllowWrite, &g.NetAllow, &g.Env} {
		if *l == nil {
			*l = []string{}
		}
	}
	c.Env = append(c.Env, grants.Env)
	b, err := json.Marshal(g)
	if err != nil {
		panic(err) // cannot happen: strings, bools, maps of them
	}
	return c, string(b)
}
