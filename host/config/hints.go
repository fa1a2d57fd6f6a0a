package config

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// homes says where each key and block of the file belongs, so that one
// written in the wrong place (a plugin's start mode in its sandbox block,
// say) is answered with its place, not only "not expected here".
var homes = map[string]string{
	"strict": "sandbox { } or a plugin block inside it", "disabled": "sandbox { } or a plugin block inside it",
	"allow_read": "sandbox { } or a plugin block inside it", "allow_write": "sandbox { } or a plugin block inside it",
	"allow_net": "sandbox { } or a plugin block inside it", "memory": "sandbox { } or a plugin block inside it",
	"pids": "sandbox { } or a plugin block inside it", "files": "sandbox { } or a plugin block inside it",
	"cpu": "sandbox { } or a plugin block inside it", "env": "sandbox { } or a plugin block inside it",
	"timeout": "sandbox { } or a plugin block inside it", "runtime": "a plugin block inside sandbox { }",
	"dir": "a plugin block inside sandbox { }", "path": "search { } or a dir block inside a plugin block of sandbox { }", "write": "a dir block inside a plugin block of sandbox { }",
	"start": "plugins { } or a plugin block inside it", "idle_timeout": "plugins { } or a plugin block inside it", "start_timeout": "plugins { } or a plugin block inside it",
	"cache":          "plugins { }",
	"state_key_file": "stateless { }", "state_ttl": "stateless { }",
	"ttl": "tasks { }", "poll_interval": "tasks { }", "max_running": "tasks { }", "max_result_size": "tasks { }",
	"escalate_after": "tasks { }", "redis": "tasks { }",
	"address": "redis { } inside tasks { }", "username": "redis { } inside tasks { }",
	"password_file": "redis { } inside tasks { }", "db": "redis { } inside tasks { }",
	"key_prefix": "redis { } inside tasks { }", "replica_timeout": "redis { } inside tasks { }",
	"sessions": "limits { }", "in_flight": "limits { }", "replay_bytes": "limits { }", "replay_budget": "limits { }", "result_size": "limits { }",
	"items": "limits { }", "definition_size": "limits { }", "list_size": "limits { }",
	"pinned": "search { }", "limit": "search { }", "add_found": "search { }", "arguments": "audit { }",
	"password": "a file named by password_file, or $PLUGHOST_REDIS_PASSWORD: never in this file",
	"plugin":   "sandbox { } (its policy), plugins { } (when it runs) or trust { } (its trust mode)",
	"mode":     "trust { } or a plugin block inside it", "allowed_signers": "trust { }",
	"bundles": "trust { }", "trusted_roots": "a bundles block inside trust { }", "require_signature": "a bundles block inside trust { }",
	"file":   "audit { } or trust { }",
	"issuer": "auth { } or console { }", "resource": "auth { }", "scopes": "auth { }", "leeway": "auth { }",
	"introspection_endpoint": "auth { }", "pass_claims": "auth { }", "client_id": "auth { } or console { }", "client_secret_file": "auth { } or console { }",
	"enabled": "console { }", "public_url": "console { }",
}

// unexpected finds the name in hcl's "not expected here" details.
var unexpected = regexp.MustCompile(`^(?:An argument named|Blocks of type) "([^"]+)" (?:is|are) not expected here`)

// placeHints adds to each "not expected here" diagnostic of err where
// that key or block belongs. Other errors are returned as they are.
func placeHints(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			placeHints(e) // the diagnostics are changed in place
		}
		return err
	}
	diags, ok := err.(hcl.Diagnostics)
	if !ok {
		return err
	}
	for _, d := range diags {
		m := unexpected.FindStringSubmatch(d.Detail)
		switch {
		case m == nil:
		case homes[m[1]] != "":
			d.Detail += ` "` + m[1] + `" belongs in ` + homes[m[1]] + "."
		case !strings.Contains(d.Detail, "Did you mean"):
			// hcl suggests a key of the block only when it is a typo
			// away; name the nearest key of the whole file, and its place.
			if near := nearest(m[1]); near != "" {
				d.Detail += ` The nearest valid key is "` + near + `", which belongs in ` + homes[near] + "."
			}
		}
	}
	return diags
}

// nearest is the key of homes nearest to name in edit distance (ties:
// the first in alphabetical order); "" when even that one shares too
// little with name to be what was meant.
func nearest(name string) string {
	best, bestD := "", len(name)/2+2
	for _, k := range slices.Sorted(maps.Keys(homes)) {
		if d := distance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
