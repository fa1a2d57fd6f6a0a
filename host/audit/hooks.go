package audit

import (
	"encoding/json"
	"time"
)

// HookDecision is a hook's decision other than pass (host/hooks' Decision,
// which plughost serve passes on: this package does not import it).
type HookDecision struct {
	Time time.Time
	// Hook is the hook's name, Point where it ran.
	Hook, Point string
	// Kind is what the question was about (tool, prompt, resource,
	// resource_template); Item its exposed name or URI; Provider the
	// plugin or device that offers it.
	Kind, Item, Provider string
	// Decision is refuse, rewrite, hide, error, timeout, would_refuse,
	// would_rewrite or would_hide; Reason the hook's, or what failed.
	Decision, Reason string
	// Subject and ClientID name the caller, as a call's line does (both
	// "" when unknown, and at on_definitions).
	Subject, ClientID string
}

// hookLine is the line of a hook's decision.
type hookLine struct {
	Time     string  `json:"time"`
	Event    string  `json:"event"` // "hook"
	Hook     string  `json:"hook"`
	Point    string  `json:"point"`
	Kind     string  `json:"kind"`
	Item     string  `json:"item"`
	Provider string  `json:"provider,omitempty"`
	Decision string  `json:"decision"`
	Reason   string  `json:"reason,omitempty"`
	Caller   *caller `json:"caller,omitempty"`
}

// Hook writes the line of a hook's decision other than pass:
//
//	{"time":"2026-11-28T03:00:00Z","event":"hook","hook":"secrets","point":"after_call","kind":"tool","item":"fetch",
//	 "provider":"fetch","decision":"rewrite","reason":"redacted 1 AWS access key","caller":{"sub":"alice"}}
func (l *Log) Hook(d HookDecision) {
	ln := hookLine{Time: d.Time.UTC().Format(time.RFC3339Nano), Event: "hook", Hook: d.Hook, Point: d.Point, Kind: d.Kind,
		Item: d.Item, Provider: d.Provider, Decision: d.Decision, Reason: d.Reason}
	if d.Subject != "" || d.ClientID != "" {
		ln.Caller = &caller{Subject: d.Subject, Client: d.ClientID}
	}
	b, err := json.Marshal(&ln)
	if err != nil { // cannot happen: strings only
		l.log.Error("audit line not written", "hook", d.Hook, "error", err)
		return
	}
	l.write(b)
}
