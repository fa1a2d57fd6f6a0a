package wrapped

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/plughost/plughost/internal/pluginhost"
)

// Expected is what a server says beforehand it offers (an MCP Bundle's
// manifest lists its tools and prompts), compared with what it lists each
// time it lists.
type Expected struct {
	// Tools and Prompts are the names declared; empty when the manifest
	// declares none of that kind (nothing to compare).
	Tools   []string `json:"tools,omitempty"`
	Prompts []string `json:"prompts,omitempty"`
	// Hold refuses a listing that differs (trust mode pinned or signed):
	// the server is not served; otherwise the difference is logged.
	Hold bool `json:"hold,omitempty"`
}

// compare reports how l differs from e: "" when it does not.
func (e *Expected) compare(l pluginhost.ProxyLists) string {
	var diffs []string
	for _, k := range []struct {
		kind     string
		declared []string
		listed   [][]byte
	}{{"tools", e.Tools, l.Tools}, {"prompts", e.Prompts, l.Prompts}} {
		if len(k.declared) == 0 {
			continue
		}
		listed := map[string]bool{}
		for _, raw := range k.listed {
			var d struct{ Name string }
			if json.Unmarshal(raw, &d) == nil {
				listed[d.Name] = true
			}
		}
		var missing, extra []string
		for _, n := range k.declared {
			if !listed[n] {
				missing = append(missing, n)
			}
			delete(listed, n)
		}
		extra = slices.Sorted(maps.Keys(listed))
		if len(missing) > 0 {
			diffs = append(diffs, fmt.Sprintf("%s declared and not listed: %s", k.kind, strings.Join(missing, ", ")))
		}
		if len(extra) > 0 {
			diffs = append(diffs, fmt.Sprintf("%s listed and not declared: %s", k.kind, strings.Join(extra, ", ")))
		}
	}
	return strings.Join(diffs, "; ")
}
