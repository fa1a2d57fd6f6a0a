package serve

import (
	"time"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/tool"
)

// The MCP server's options, from the host.

// mcpOptions are the options of the MCP server serve runs, over stdio or
// at /mcp: in tool search mode when it is on, unless the search block
// gives it a path of its own (searchOptions).
func (h *Host) mcpOptions() *mcp.Options { return h.options(h.searchPath == "") }

// searchOptions are the options of the MCP server serve --http runs at the
// search block's path: tool search mode.
func (h *Host) searchOptions() *mcp.Options { return h.options(true) }

// options are the MCP server's options, in tool search mode (when it is
// on) if search.
func (h *Host) options(search bool) *mcp.Options {
	ready := h.manager.Ready() // no list from a catalog still loading
	var ts *mcp.ToolSearch
	if search && h.search != nil {
		ready = h.searchReady // nor a search from an index still filling
		ts = h.search
	}
	return &mcp.Options{
		Version: h.version,
		Logger:  h.log.Named("mcp"),
		Ready:   ready,
		// The stateless revision's requestState, sealed with the key
		// replicas share; the tasks, in the store they share.
		StateSealer:      h.sealer,
		StateTTL:         h.stateTTL,
		Tasks:            h.tasks,
		EscalateAfter:    h.escalateAfter,
		ToolSearch:       ts,
		OnCallEnd:        h.obs.onCallEnd(),
		OnLimit:          h.obs.onLimit(),
		MaxInFlight:      h.limits.InFlight,
		NotificationRate: h.limits.NotificationRate,
		MaxListenBytes:   h.limits.ListenBytes,
		ListenBudget:     h.limits.ListenBudget,
		Access:           h.accessFor(),
		RateLimit:        h.rateLimiter(),
		OnRateLimited:    h.obs.onRateLimited(),
		Tracer:           h.telemetry.Tracer(),
		Meter:            h.telemetry.Meter(),
	}
}

// accessFor is mcp.Options.Access: the guard of each caller, from the
// access block's rules; nil without rules.
func (h *Host) accessFor() func(*mcp.Caller) tool.Guard {
	rules := h.access.Load()
	if rules == nil {
		return nil
	}
	return rules.For
}

// DefaultEscalateAfter is how long a call of a tool that supports tasks
// runs for its request before plughost makes it a task, when the tasks
// block does not say: long enough that a quick call is answered at once,
// short enough that a client's request timeout is never near.
const DefaultEscalateAfter = 5 * time.Second

// escalateAfter is the tasks block's escalate_after: its value, 0 for
// "0s" (only when the plugin says so), or the default.
func escalateAfter(t config.Tasks) time.Duration {
	switch {
	case t.EscalateOff:
		return 0
	case t.EscalateAfter > 0:
		return t.EscalateAfter
	}
	return DefaultEscalateAfter
}
