package pluginwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plughost/plughost/internal/pluginpb"
)

// The bounds of one InputRequired a plugin sends.
const (
	// MaxInputRequests is the most requests one InputRequired may carry.
	MaxInputRequests = 16
	// MaxRequestState is the largest request_state of an InputRequired.
	MaxRequestState = 64 << 10
)

// inputMethods are the methods a plugin may ask the client, and whether
// their params may be absent.
var inputMethods = map[string]bool{
	"sampling/createMessage": false,
	"elicitation/create":     false,
	"roots/list":             true,
}

// CheckRequests checks an InputRequired's requests: a JSON object of 1 to
// 16 distinct non-empty keys, each an MCP request the client can answer.
func CheckRequests(b []byte) error {
	if !IsObject(b) {
		return fmt.Errorf("requests is not a JSON object: %.80q", b)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string) // an object's keys are strings
		if key == "" {
			return errors.New(`requests has an empty key`)
		}
		if seen[key] {
			return fmt.Errorf("request %q appears twice", key)
		}
		seen[key] = true
		if len(seen) > MaxInputRequests {
			return fmt.Errorf("more than %d requests", MaxInputRequests)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		if err := checkRequest(raw); err != nil {
			return fmt.Errorf("request %q: %v", key, err)
		}
	}
	if len(seen) == 0 {
		return errors.New("requests is empty")
	}
	return nil
}

// checkRequest checks one input request: {"method": ..., "params": {...}}.
func checkRequest(raw json.RawMessage) error {
	var req map[string]json.RawMessage
	if !IsObject(raw) || json.Unmarshal(raw, &req) != nil {
		return fmt.Errorf("not a JSON object: %.80s", raw)
	}
	var method string
	if err := json.Unmarshal(req["method"], &method); err != nil {
		return fmt.Errorf("method is not a string: %.80s", req["method"])
	}
	optional, ok := inputMethods[method]
	if !ok {
		return fmt.Errorf("method %q is none of sampling/createMessage, elicitation/create and roots/list", method)
	}
	params, present := req["params"]
	switch {
	case !present && optional:
	case !present:
		return fmt.Errorf("%s has no params", method)
	case !IsObject(params):
		return fmt.Errorf("%s params is not a JSON object: %.80s", method, params)
	}
	return nil
}

// CheckInputRequired checks a plugin's InputRequired as the host does: its
// requests (CheckRequests) and the size of its state. The error wraps
// ErrInvalidResult naming the problem; what names the request ("call
// \"x\"").
func CheckInputRequired(what string, ir *pluginpb.InputRequired) error {
	if err := CheckRequests(ir.GetRequests()); err != nil {
		return fmt.Errorf("%s: %w: input_required: %v", what, ErrInvalidResult, err)
	}
	if n := len(ir.GetRequestState()); n > MaxRequestState {
		return fmt.Errorf("%s: %w: input_required: request_state of %d bytes, over the %d allowed", what, ErrInvalidResult, n, MaxRequestState)
	}
	return nil
}
