package pluginproto

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// GrantsEnv is the environment variable in which the host tells a plugin
// what its sandbox policy grants it: a JSON object shaped as Grants. A
// plugin in another language reads it the same way.
const GrantsEnv = "PLUGHOST_GRANTS"

// Grants is what the host granted the plugin beyond the default policy.
// The host writes it from sandbox.Grants, the same JSON; the SDK keeps its
// own copy of the shape so that a plugin does not link the sandbox (the
// tests of both packages pin the JSON).
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
	Dirs map[string]GrantedDir `json:"dirs"`
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

// GrantedDir is one named directory: its path, and whether the plugin may
// write in it.
type GrantedDir struct {
	Path  string `json:"path"`
	Write bool   `json:"write"`
}

var (
	grantsOnce sync.Once
	grants     *Grants
)

// Granted returns what the host granted this plugin, read from $GrantsEnv
// once. Outside a host (a unit test, a run by hand) it is empty: no named
// directory, no network.
func Granted() *Grants {
	grantsOnce.Do(func() {
		grants = &Grants{AllowNet: "none"}
		if raw := os.Getenv(GrantsEnv); raw != "" {
			var g Grants
			if err := json.Unmarshal([]byte(raw), &g); err == nil {
				grants = &g
			}
		}
	})
	return grants
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
