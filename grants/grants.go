// Package grants is what the host tells a plugin it was granted: the
// sandbox (package sandbox) writes a Grants as JSON into the plugin's
// environment variable Env when it starts the plugin, and the plugin reads
// it back (in Go, pluginproto.Granted). It is part of the plugin contract:
// a plugin in another language parses the same JSON.
//
// It is a leaf: it imports nothing of the module, so that the sandbox and
// the SDK share the one definition without importing each other.
package grants

import "fmt"

// Env is the environment variable in which the host tells a plugin what
// its sandbox policy grants it: a JSON object shaped as Grants.
const Env = "PLUGHOST_GRANTS"

// Grants is what the host granted a plugin beyond the default policy:
// what Env holds, as JSON.
// A plugin asks for a directory by a name of its own choosing ("notes"),
// and the operator's configuration decides which directory that is:
//
//	sandbox {
//	  plugin "notes" {
//	    dir "notes" {
//	      path  = "/srv/notes"
//	      write = true
//	    }
//	  }
//	}
//
// and the plugin finds it:
//
//	notes, err := pluginproto.Granted().Dir("notes")
//	if err != nil {
//		log.Fatal(err) // says what the operator must add to the configuration
//	}
type Grants struct {
	// Plugin is the plugin's provider name, as the host names it (the
	// label of its configuration block).
	Plugin string `json:"plugin"`
	// Dirs are the named directories, by name.
	Dirs map[string]Dir `json:"dirs"`
	// AllowRead and AllowWrite are every path readable (and writable)
	// beyond the default policy, the named directories included.
	AllowRead  []string `json:"allow_read"`
	AllowWrite []string `json:"allow_write"`
	// AllowNet is "none", "all" or "list" (outbound TCP to NetAllow's
	// host:port entries only).
	AllowNet string   `json:"allow_net"`
	NetAllow []string `json:"net_allow"`
	// Env names the host's environment variables passed through.
	Env []string `json:"env"`
}

// Dir is one named directory: its path, and whether the plugin may write
// in it.
type Dir struct {
	Path  string `json:"path"`
	Write bool   `json:"write"`
}

// Dir returns the path of the directory granted under name, or an error
// that tells the operator how to grant one.
func (g *Grants) Dir(name string) (string, error) {
	if d, ok := g.Dirs[name]; ok {
		return d.Path, nil
	}
	return "", g.missing(name, false)
}

// WritableDir is Dir for a directory the plugin must be able to write in:
// one granted read-only is an error too.
func (g *Grants) WritableDir(name string) (string, error) {
	if d, ok := g.Dirs[name]; ok && d.Write {
		return d.Path, nil
	}
	return "", g.missing(name, true)
}

func (g *Grants) missing(name string, write bool) error {
	plugin := g.Plugin
	if plugin == "" {
		plugin = "NAME"
	}
	if _, ok := g.Dirs[name]; ok && write {
		return fmt.Errorf("the directory %q is granted read-only, and this plugin writes in it: add the line write = true to the dir %q block of sandbox { plugin %q { ... } } in the configuration file", name, name, plugin)
	}
	block := fmt.Sprintf(`sandbox { plugin %q { dir %q { path = "/the/directory" } } }`, plugin, name)
	if write {
		return fmt.Errorf("no writable directory %q is granted to this plugin: the operator grants one in the configuration file, %s with the line write = true in the dir block", name, block)
	}
	return fmt.Errorf("no directory %q is granted to this plugin: the operator grants one in the configuration file, %s", name, block)
}
