package pluginproto

import (
	"encoding/json"
	"fmt"
)

// CapabilityRequiredError is a plugin's answer when a call cannot run
// because the client did not declare a capability it needs (sampling,
// say): its handler returned the error of an Elicit, Sample or Roots
// that wraps ErrClientUnsupported. The host's Client.CallTool (package host/pluginclient; and StartCall's done)
// returns it as its error, and so does plugintest.CallTool. A
// host tells the client which capabilities the tool needs: MCP 2026-07-28
// answers error -32021 (MissingRequiredClientCapability) naming
// Capabilities; an older session gets an isError result carrying Message.
type CapabilityRequiredError struct {
	// Capabilities is a JSON object in the shape of MCP ClientCapabilities
	// naming what the call needs, e.g. {"sampling":{}}.
	Capabilities json.RawMessage
	// Message is the handler's error: what it needed and why.
	Message string
}

func (e *CapabilityRequiredError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("the call needs client capabilities the client did not declare: %s", e.Capabilities)
	}
	return e.Message
}

var _ error = (*CapabilityRequiredError)(nil)

// capabilityRequired returns the *CapabilityRequiredError of a handler's
// error that wraps (anywhere in its tree) the error of one or more
// requests the client did not declare the capability for, naming all of
// them; nil for any other error.
func capabilityRequired(err error) *CapabilityRequiredError {
	var needs []capability
	walkErrors(err, func(e error) {
		if u, ok := e.(*unsupportedError); ok {
			needs = append(needs, u.need)
		}
	})
	if len(needs) == 0 {
		return nil
	}
	return &CapabilityRequiredError{Capabilities: capabilitiesJSON(needs), Message: err.Error()}
}

// walkErrors calls f on err and every error it wraps, depth first.
func walkErrors(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, f)
		}
	}
}

// capabilitiesJSON is the MCP ClientCapabilities object that declares
// every one of needs: {"sampling":{"tools":{}},"roots":{}}, say. A bare
// elicitation (form mode) beside its URL mode is named as form.
func capabilitiesJSON(needs []capability) json.RawMessage {
	m := make(map[string]map[string]struct{})
	for _, c := range needs {
		if m[c.top] == nil {
			m[c.top] = make(map[string]struct{})
		}
		if c.sub != "" {
			m[c.top][c.sub] = struct{}{}
		}
	}
	for _, c := range needs {
		if c.top == "elicitation" && c.sub == "" && len(m[c.top]) > 0 {
			m[c.top]["form"] = struct{}{}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // cannot happen: maps of strings always marshal
	}
	return b
}
