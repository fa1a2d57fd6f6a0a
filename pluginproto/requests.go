package pluginproto

import (
	"slices"
	"strings"
)

// Requests is what a plugin asks the operator to grant it: paths it reads,
// paths it writes, network destinations and host environment variables.
// The plugin says so with Plugin.Request; the host learns it from
// Describe (Description.Requests) and shows it next to what the plugin's
// sandbox policy grants (`plughost plugins`), logging what is asked for
// and not granted. Asking grants nothing: the operator's configuration
// does, and a plugin always runs with that grant only.
type Requests struct {
	// Read are absolute paths (files or directories) the plugin reads.
	Read []string `json:"read,omitempty"`
	// Write are absolute paths the plugin reads and writes.
	Write []string `json:"write,omitempty"`
	// Net are "host:port" destinations the plugin connects to; "*" is
	// any.
	Net []string `json:"net,omitempty"`
	// Env are names of the host's environment variables the plugin
	// reads.
	Env []string `json:"env,omitempty"`
}

// Empty reports whether r asks for nothing.
func (r Requests) Empty() bool {
	return len(r.Read) == 0 && len(r.Write) == 0 && len(r.Net) == 0 && len(r.Env) == 0
}

// String is r for logs: "read /srv/a; net api.example.com:443; env TOKEN".
func (r Requests) String() string {
	var parts []string
	for _, f := range []struct {
		what string
		list []string
	}{{"read", r.Read}, {"write", r.Write}, {"net", r.Net}, {"env", r.Env}} {
		if len(f.list) > 0 {
			parts = append(parts, f.what+" "+strings.Join(f.list, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// Clone returns a deep copy of r.
func (r Requests) Clone() Requests {
	return Requests{Read: slices.Clone(r.Read), Write: slices.Clone(r.Write), Net: slices.Clone(r.Net), Env: slices.Clone(r.Env)}
}

// Request says what the plugin asks the operator to grant it (see
// Requests); Describe tells the host. Call it before Serve: the host asks
// once, when it starts the plugin.
//
//	p.Request(pluginproto.Requests{Read: []string{"/srv/notes"}, Net: []string{"api.example.com:443"}})
func (p *Plugin) Request(r Requests) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = r.Clone()
}

// Requested returns what Request set.
func (p *Plugin) Requested() Requests {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.requests.Clone()
}

// Equal reports whether r and o ask for the same, in the same order.
func (r Requests) Equal(o Requests) bool {
	return slices.Equal(r.Read, o.Read) && slices.Equal(r.Write, o.Write) && slices.Equal(r.Net, o.Net) && slices.Equal(r.Env, o.Env)
}
