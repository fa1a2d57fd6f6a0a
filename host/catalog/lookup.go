package catalog

import (
	"encoding/json"
	"sort"
)

// Tool returns the definition of the tool exposed as name: the same bytes
// tools/list serves for it (the provider's MCP Tool object, compact, with
// "name" rewritten to the exposed name), or nil when no tool is exposed by
// that name. The slice is shared and must not be modified.
//
// It reads the current snapshot, as CallTool does, so a tool that is
// listed is found; a tool may still go away before a call reaches it.
func (c *Catalog) Tool(name string) json.RawMessage {
	l := &c.snap.Load().tools.list
	i := sort.SearchStrings(l.keys, name)
	if i < len(l.keys) && l.keys[i] == name {
		return l.items[i]
	}
	return nil
}
