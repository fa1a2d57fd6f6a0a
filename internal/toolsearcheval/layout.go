package toolsearcheval

import (
	"encoding/json"
	"fmt"

	"github.com/plughost/plughost/host/naming"
)

// Layout is the corpus as plughost serves it from a directory of
// corpusplugin binaries, one per server, each named PluginName(server):
// every tool exposed under the name plughost's catalog gives it
// (naming.Assign: a name two servers share is prefixed with the plugin's,
// "filesystem__read_file"). With it, a search through MCP can be scored
// (IDs) and compared with the same search in process (Defs).
type Layout struct {
	// IDs maps each exposed name to the tool's corpus ID
	// ("<server>::<tool>").
	IDs map[string]string
	// Defs holds each plugin's definitions under their exposed names, by
	// plugin name: what the catalog hands the host's search index.
	Defs map[string][]json.RawMessage
}

// Lay computes the layout of servers.
func Lay(servers []Server) (*Layout, error) {
	var ns []*naming.Name
	type own struct {
		id  string
		def json.RawMessage
	}
	tools := map[[2]string]own{}
	for _, s := range servers {
		plugin := PluginName(s.Name)
		for _, t := range s.Tools {
			var def map[string]json.RawMessage
			var name string
			if err := json.Unmarshal(t.Def, &def); err != nil || json.Unmarshal(def["name"], &name) != nil {
				return nil, fmt.Errorf("tool %s: its definition has no name: %.80s", t.ID, t.Def)
			}
			ns = append(ns, &naming.Name{Provider: plugin, Own: name})
			tools[[2]string{plugin, name}] = own{t.ID, t.Def}
		}
	}
	naming.Assign(ns, nil)
	l := &Layout{IDs: map[string]string{}, Defs: map[string][]json.RawMessage{}}
	for _, n := range ns {
		t := tools[[2]string{n.Provider, n.Own}]
		var def map[string]json.RawMessage
		if err := json.Unmarshal(t.def, &def); err != nil {
			return nil, err
		}
		def["name"], _ = json.Marshal(n.Exposed)
		b, err := json.Marshal(def)
		if err != nil {
			return nil, err
		}
		l.IDs[n.Exposed] = t.id
		l.Defs[n.Provider] = append(l.Defs[n.Provider], b)
	}
	return l, nil
}
