package audit

import (
	"encoding/json"
	"time"
)

// DefinitionChange is a change of state of one of a plugin's definitions
// (host/manager's DefinitionEvent, which plughost serve passes on): held
// back as changed or pending, served again once approved, or changed and
// served in trust mode open.
type DefinitionChange struct {
	Time   time.Time
	Plugin string
	// Digest is the plugin file's, when its trust was checked.
	Digest string
	// Kind is tool, prompt, resource or resource template; Name its name
	// or URI.
	Kind, Name string
	// State is pending, changed or approved, flagged or cleared (a
	// hook's screening); Held says clients are not served the definition
	// as the plugin lists it.
	State string
	Held  bool
	// Reason is why a hook held it back (flagged).
	Reason string
	// Pin is the listed definition's fingerprint, Approved the one it was
	// compared with; Diff the members that differ, word by word.
	Pin, Approved string
	Diff          []string
}

// definitionLine is the line of a definition's change of state.
type definitionLine struct {
	Time     string   `json:"time"`
	Event    string   `json:"event"` // "definition"
	Plugin   string   `json:"plugin"`
	Kind     string   `json:"kind"`
	Name     string   `json:"name"`
	State    string   `json:"state"`
	Held     bool     `json:"held"`
	Reason   string   `json:"reason,omitempty"`
	Digest   string   `json:"digest,omitempty"`
	Pin      string   `json:"pin,omitempty"`
	Approved string   `json:"approved_pin,omitempty"`
	Diff     []string `json:"diff,omitempty"`
}

// Definition writes the line of a definition's change of state:
//
//	{"time":"2026-11-26T10:00:00Z","event":"definition","plugin":"rug","kind":"tool","name":"add","state":"changed",
//	 "held":true,"pin":"sha256/v1:…","approved_pin":"sha256/v1:…","diff":["description: Adds two numbers. {+Then …+}"]}
func (l *Log) Definition(c DefinitionChange) {
	b, err := json.Marshal(&definitionLine{Time: c.Time.UTC().Format(time.RFC3339Nano), Event: "definition", Plugin: c.Plugin,
		Kind: c.Kind, Name: c.Name, State: c.State, Held: c.Held, Reason: c.Reason, Digest: c.Digest, Pin: c.Pin, Approved: c.Approved, Diff: c.Diff})
	if err != nil { // cannot happen: strings only
		l.log.Error("audit line not written", "plugin", c.Plugin, "error", err)
		return
	}
	l.write(b)
}
