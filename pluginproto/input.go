package pluginproto

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
)

// The vocabulary of input rounds, shared by the host and the SDK: a
// handler that needs the client's input answers an InputRequiredError, and
// the host runs the same call, read or prompt again with an Input.

// InputRequiredError is a plugin's answer when its handler needs the
// client's input first: Client.CallTool (and StartCall's done),
// ReadResource and GetPrompt return it as their error, and the in-process
// helpers (plugintest.CallTool, ...) too when the request has no AnswerInput.
// The host gets the answers from the client and runs the same request
// again with an Input holding them and State.
type InputRequiredError struct {
	// Requests is a JSON object of 1 to 16 entries: key → an MCP request
	// object ({"method": "sampling/createMessage" | "elicitation/create" |
	// "roots/list", "params": {...}}). The keys name the answers in
	// Input.Responses and Input.Errors.
	Requests json.RawMessage
	// State is opaque to the host and the client; it comes back in
	// Input.State. At most 64 KiB.
	State string
}

func (e *InputRequiredError) Error() string {
	return fmt.Sprintf("the plugin needs the client's input first (%d bytes of requests)", len(e.Requests))
}

var _ error = (*InputRequiredError)(nil)

// inputOf converts a wire Input for the SDK; nil stays nil.
func inputOf(m *pluginpb.Input) *pluginhost.Input {
	if m == nil {
		return nil
	}
	in := &pluginhost.Input{Responses: m.GetResponses(), State: m.GetRequestState()}
	if len(m.GetErrors()) > 0 {
		in.Errors = make(map[string]InputError, len(m.GetErrors()))
		for k, e := range m.GetErrors() {
			in.Errors[k] = InputError{Code: int(e.GetCode()), Message: e.GetMessage()}
		}
	}
	return in
}

// maxRounds bounds the input rounds of an in-process helper, so that a
// handler that never stops asking fails instead of looping.
const maxRounds = 32

// rounds runs one request of an in-process helper (run) through as many
// input rounds as its handler needs, answering each round's requests with
// answer. An *InputRequiredError is checked as the host checks it; without
// answer, it is returned.
func rounds(what string, answer pluginhost.AnswerFunc, in *pluginhost.Input, run func(*pluginhost.Input) (json.RawMessage, error)) (json.RawMessage, error) {
	for round := 1; ; round++ {
		res, err := run(in)
		var ir *InputRequiredError
		if !errors.As(err, &ir) {
			return res, err
		}
		if err := pluginwire.CheckInputRequired(what, &pluginpb.InputRequired{Requests: ir.Requests, RequestState: ir.State}); err != nil {
			return nil, err
		}
		if answer == nil {
			return nil, ir
		}
		if round == maxRounds {
			return nil, fmt.Errorf("%s: the handler still asked for input after %d rounds", what, maxRounds)
		}
		if in, err = answerAll(ir, answer); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
}

// answerAll answers each of ir's requests with answer, as a host would.
func answerAll(ir *InputRequiredError, answer pluginhost.AnswerFunc) (*pluginhost.Input, error) {
	var requests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(ir.Requests, &requests); err != nil {
		return nil, err
	}
	// In the order of the keys, shortest first: "2" before "10".
	keys := slices.SortedFunc(maps.Keys(requests), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
	})
	responses := make(map[string]json.RawMessage)
	in := &pluginhost.Input{State: ir.State}
	for _, key := range keys {
		r := requests[key]
		res, err := answer(r.Method, r.Params)
		var ie *InputError
		switch {
		case errors.As(err, &ie):
		case err != nil:
			ie = &InputError{Code: -32603, Message: err.Error()}
		case !pluginwire.IsObject(res):
			return nil, fmt.Errorf("AnswerInput's answer to %s is not a JSON object: %.80q", r.Method, res)
		default:
			responses[key] = res
			continue
		}
		if in.Errors == nil {
			in.Errors = make(map[string]InputError)
		}
		in.Errors[key] = *ie
	}
	b, err := json.Marshal(responses)
	if err != nil {
		return nil, err
	}
	in.Responses = b
	return in, nil
}

// InputError is why the client did not answer one input request: it
// answered with a JSON-RPC error (Code, Message), or the host did not ask
// it because the client did not declare the capability (code -32601,
// naming it). A handler's Elicit, Sample or Roots returns it as its error
// (a *InputError); match it with errors.As.
type InputError = pluginhost.InputError
