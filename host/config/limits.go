package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/plughost/plughost/host/ratelimit"
)

// Limits holds the settings of the limits block: how much of the host a
// client or a plugin may make it hold, and so what each may cost the
// others. A zero field is one the file does not set (the default of the
// package that enforces it applies):
//
//	limits {
//	  sessions        = 1000     # HTTP sessions open at once; when all are open the least recently
//	                             # used idle one is evicted (404 on its next request); 1 to 1000000
//	  in_flight       = 64       # calls one session runs at once; 4× as many wait, then 429 (HTTP)
//	                             # or the server stops reading (stdio); 1 to 100000
//	  replay_bytes    = "4MiB"   # events one HTTP session keeps for a client resuming a stream;
//	                             # 1KiB to 1GiB
//	  replay_budget   = "256MiB" # events every HTTP session keeps, together; over it a session
//	                             # drops its own oldest first; 1MiB to 64GiB
//	  result_size     = "16MiB"  # the largest message of a plugin's call (its result); over it the
//	                             # call is an isError result naming both sizes; 1KiB to 1GiB
//	  items           = 10000    # a plugin's tools (and resources, templates, prompts), each list;
//	                             # over it the plugin fails to load, naming the limit; all devices'
//	                             # tools together too, the excess skipped; 1 to 1000000
//	  definition_size = "64KiB"  # one definition (a tool's JSON); over it the plugin fails to load;
//	                             # 1KiB to 16MiB
//	  list_size       = "16MiB"  # one list's definitions in all; over it the plugin fails to load;
//	                             # 1KiB to 1GiB
//	  plugin_in_flight = 256     # requests one plugin runs at once, from every session; one more
//	                             # is an isError result naming the limit; 1 to 100000
//	  notification_rate = 100    # progress and log notifications one call sends its client per
//	                             # second (bursts as many); past it they are dropped and counted
//	                             # (a WARN line per call, plughost_limit_hits_total); 1 to 100000
//	  listen_bytes    = "256KiB" # URIs and task ids one subscriptions/listen stream names, together;
//	                             # more is -32602 naming the limit; 1KiB to 64MiB
//	  listen_budget   = "16MiB"  # URIs and task ids all open listen streams name together; a stream
//	                             # past it is -32602 naming the limit; 64KiB to 4GiB
//	}
type Limits struct {
	// Sessions is sessions: streamable.Options.MaxSessions.
	Sessions int
	// InFlight is in_flight: mcp.Options.MaxInFlight.
	InFlight int
	// ReplayBytes is replay_bytes: streamable.Options.ReplayBytes.
	ReplayBytes int64
	// ReplayBudget is replay_budget: streamable.Options.ReplayBudget.
	ReplayBudget int64
	// ResultSize is result_size: pluginclient.Limits.MaxResultSize.
	ResultSize int64
	// Items is items: pluginclient.Limits.MaxItems, and
	// catalog.Options.MaxDeviceItems.
	Items int
	// DefinitionSize is definition_size:
	// pluginclient.Limits.MaxDefinitionSize.
	DefinitionSize int64
	// ListSize is list_size: pluginclient.Limits.MaxListSize.
	ListSize int64
	// NotificationRate is notification_rate: mcp.Options.NotificationRate.
	NotificationRate int
	// PluginInFlight is plugin_in_flight: manager.Options.MaxInFlight.
	PluginInFlight int
	// ListenBytes is listen_bytes: mcp.Options.MaxListenBytes.
	ListenBytes int64
	// ListenBudget is listen_budget: mcp.Options.ListenBudget.
	ListenBudget int64
	// Callers is the caller and rule blocks: per-caller rate limits and
	// quotas (ratelimit.go); nil when it has neither.
	Callers *ratelimit.Policy
}

var limitsSchema = hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "sessions"}, {Name: "in_flight"},
	{Name: "replay_bytes"}, {Name: "replay_budget"}, {Name: "result_size"}, {Name: "items"}, {Name: "definition_size"}, {Name: "list_size"},
	{Name: "notification_rate"}, {Name: "plugin_in_flight"}, {Name: "listen_bytes"}, {Name: "listen_budget"}},
	Blocks: []hcl.BlockHeaderSchema{{Type: "caller"}, {Type: "rule", LabelNames: []string{"name"}}}}

// decode reads the limits block.
func (l *Limits) decode(body hcl.Body) error {
	content, err := attributes(body, &limitsSchema, func(name string, a *hcl.Attribute, v cty.Value) (err error) {
		switch name {
		case "sessions":
			l.Sessions, err = wholeIn(a, v, 1, 1_000_000)
		case "in_flight":
			l.InFlight, err = wholeIn(a, v, 1, 100_000)
		case "plugin_in_flight":
			l.PluginInFlight, err = wholeIn(a, v, 1, 100_000)
		case "notification_rate":
			l.NotificationRate, err = wholeIn(a, v, 1, 100_000)
		case "items":
			l.Items, err = wholeIn(a, v, 1, 1_000_000)
		case "replay_bytes":
			l.ReplayBytes, err = bytesIn(a, v, 1<<10, 1<<30, "1KiB to 1GiB")
		case "replay_budget":
			l.ReplayBudget, err = bytesIn(a, v, 1<<20, 64<<30, "1MiB to 64GiB")
		case "result_size":
			l.ResultSize, err = bytesIn(a, v, 1<<10, 1<<30, "1KiB to 1GiB")
		case "definition_size":
			l.DefinitionSize, err = bytesIn(a, v, 1<<10, 16<<20, "1KiB to 16MiB")
		case "listen_bytes":
			l.ListenBytes, err = bytesIn(a, v, 1<<10, 64<<20, "1KiB to 64MiB")
		case "listen_budget":
			l.ListenBudget, err = bytesIn(a, v, 64<<10, 4<<30, "64KiB to 4GiB")
		case "list_size":
			l.ListSize, err = bytesIn(a, v, 1<<10, 1<<30, "1KiB to 1GiB")
		}
		return err
	})
	if err != nil {
		return err
	}
	l.Callers, err = decodeRateLimits(content.Blocks)
	return err
}

// bytesIn reads a size from lo to hi bytes, which span spells.
func bytesIn(a *hcl.Attribute, v cty.Value, lo, hi int64, span string) (int64, error) {
	n, err := parseBytes(v)
	if err != nil {
		return 0, diag(a.Expr.Range(), "Invalid "+a.Name, a.Name+" must be "+err.Error())
	}
	if n < lo || n > hi {
		return 0, diag(a.Expr.Range(), "Invalid "+a.Name, fmt.Sprintf("%s must be from %s, not %d bytes", a.Name, span, n))
	}
	return n, nil
}
