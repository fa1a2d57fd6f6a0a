package sandbox

import (
	"encoding/json"
	"slices"
)

// GrantsEnv is the environment variable through which every plugin learns
// what it was granted: a JSON object (see [Grants]), part of the plugin
// contract. The Go SDK reads it (pluginproto.Grants); a plugin in another
// language parses it.
const GrantsEnv = "PLUGHOST_GRANTS"

// Dir is a directory granted to a plugin under a name it asks for.
type Dir struct {
	Name  string
	Path  string
	Write bool
}

// Grants is what $PLUGHOST_GRANTS holds: the plugin's provider name and
// what its policy grants beyond the default.
type Grants struct {
	Plugin string `json:"plugin"`
	// Dirs are the named directories, by name.
	Dirs map[string]GrantedDir `json:"dirs"`
	// AllowRead and AllowWrite are every path readable (writable) beyond
	// the default policy, the named directories included.
	AllowRead  []string `json:"allow_read"`
	AllowWrite []string `json:"allow_write"`
	// AllowNet is "none", "all" or "list"; NetAllow the host:port entries
	// of a list.
	AllowNet string   `json:"allow_net"`
	NetAllow []string `json:"net_allow"`
	// Env names the host's variables passed through.
	Env []string `json:"env"`
}

// GrantedDir is one named directory of Grants.
type GrantedDir struct {
	Path  string `json:"path"`
	Write bool   `json:"write"`
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
// read and write paths and GrantsEnv to its environment, and the value of
// GrantsEnv for plugin.
func (p *Policy) granted(plugin string) (*Policy, string) {
	c := p.Clone()
	g := Grants{Plugin: plugin, Dirs: map[string]GrantedDir{}, AllowNet: string(p.net()), NetAllow: slices.Clone(p.NetAllow), Env: slices.Clone(p.Env)}
	for _, d := range p.Dirs {
		g.Dirs[d.Name] = GrantedDir{Path: d.Path, Write: d.Write}
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
	c.Env = append(c.Env, GrantsEnv)
	b, err := json.Marshal(g)
	if err != nil {
		panic(err) // cannot happen: strings, bools, maps of them
	}
	return c, string(b)
}
