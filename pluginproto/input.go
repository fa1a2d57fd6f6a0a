package pluginproto

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/plughost/plughost/internal/pluginpb"
)

// The vocabulary of input rounds, shared by the host and the SDK: a
// handler that needs the client's input answers an InputRequiredError, and
// the host runs the same call, read or prompt again with an Input.

// Input is the client's answers to an InputRequiredError, carried by the
// call (or read, or prompt get) that retries it.
type Input struct {
	// Responses is a JSON object: for each key of the InputRequiredError's
	// requests that the client answered, its result (a
	// CreateMessageResult, ElicitResult or ListRootsResult). Nil when
	// there are none.
	Responses json.RawMessage
	// Errors are the keys the client could not answer, and why.
	Errors map[string]InputError
	// State is the InputRequiredError's State, as the plugin returned it.
	State string
}

// InputError is why the client did not answer one input request: it
// answered with a JSON-RPC error, or the host did not ask it because the
// client did not declare the capability (code -32601, naming it). A
// handler's Elicit, Sample or Roots returns it as its error (a
// *InputError).
type InputError struct {
	// Code is a JSON-RPC error code.
	Code int
	// Message is the client's (or the host's) explanation.
	Message string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("the client answered with error %d: %s", e.Code, e.Message)
}

// InputRequiredError is a plugin's answer when its handler needs the
// client's input first: Client.CallTool (and StartCall's done),
// ReadResource and GetPrompt return it as their error, and the in-process
// helpers (Plugin.CallTool, ...) too when the request has no AnswerInput.
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

var (
	_ error = (*InputError)(nil)
	_ error = (*InputRequiredError)(nil)
)

const (
	// maxInputRequests is the most requests one InputRequired may carry.
	maxInputRequests = 16
	// maxRequestState is the largest request_state of an InputRequired.
	maxRequestState = 64 << 10
	// maxPluginMessage is the largest message a plugin is sure to accept:
	// gRPC's default receive limit, which go-plugin's servers keep. (The
	// host accepts anything up to 2 GiB from a plugin: go-plugin dials
	// with that limit, for tool results and every other answer alike.)
	maxPluginMessage = 4 << 20
)

// inputMethods are the methods a plugin may ask the client, and whether
// their params may be absent.
var inputMethods = map[string]bool{
	"sampling/createMessage": false,
	"elicitation/create":     false,
	"roots/list":             true,
}

// inputRequired checks a plugin's InputRequired and returns it as an
// *InputRequiredError, or an error wrapping ErrInvalidResult naming the
// problem. what names the request ("call \"x\"").
func inputRequired(what string, ir *pluginpb.InputRequired) error {
	if err := checkRequests(ir.GetRequests()); err != nil {
		return fmt.Errorf("%s: %w: input_required: %v", what, ErrInvalidResult, err)
	}
	if n := len(ir.GetRequestState()); n > maxRequestState {
		return fmt.Errorf("%s: %w: input_required: request_state of %d bytes, over the %d allowed", what, ErrInvalidResult, n, maxRequestState)
	}
	return &InputRequiredError{Requests: ir.GetRequests(), State: ir.GetRequestState()}
}

// checkRequests checks an InputRequired's requests: a JSON object of 1 to
// 16 distinct non-empty keys, each an MCP request the client can answer.
func checkRequests(b []byte) error {
	if !isObject(b) {
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
		if len(seen) > maxInputRequests {
			return fmt.Errorf("more than %d requests", maxInputRequests)
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
	if !isObject(raw) || json.Unmarshal(raw, &req) != nil {
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
	case !isObject(params):
		return fmt.Errorf("%s params is not a JSON object: %.80s", method, params)
	}
	return nil
}

// inputPB converts the host's Input for the wire; nil stays nil. A
// Responses that is not a JSON object is an error.
func inputPB(in *Input) (*pluginpb.Input, error) {
	if in == nil {
		return nil, nil
	}
	if len(in.Responses) > 0 && !isObject(in.Responses) {
		return nil, fmt.Errorf("input responses is not a JSON object: %.80q", in.Responses)
	}
	m := &pluginpb.Input{Responses: in.Responses, RequestState: in.State}
	if len(in.Errors) > 0 {
		m.Errors = make(map[string]*pluginpb.InputError, len(in.Errors))
		for k, e := range in.Errors {
			m.Errors[k] = &pluginpb.InputError{Code: int32(e.Code), Message: e.Message}
		}
	}
	return m, nil
}

// inputOf converts a wire Input for the SDK; nil stays nil.
func inputOf(m *pluginpb.Input) *Input {
	if m == nil {
		return nil
	}
	in := &Input{Responses: m.GetResponses(), State: m.GetRequestState()}
	if len(m.GetErrors()) > 0 {
		in.Errors = make(map[string]InputError, len(m.GetErrors()))
		for k, e := range m.GetErrors() {
			in.Errors[k] = InputError{Code: int(e.GetCode()), Message: e.GetMessage()}
		}
	}
	return in
}

// capabilities is what the host sends as the client's capabilities: {}
// when it has none.
func capabilities(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return emptyObject
	}
	return b
}

// checkSize refuses a request the plugin would refuse: one over the 4 MiB
// a gRPC server accepts by default. Only requests carrying the client's
// input or its capabilities can get there.
func checkSize(what string, m proto.Message) error {
	if n := proto.Size(m); n > maxPluginMessage {
		return fmt.Errorf("%s: the request takes %d bytes with the client's input and capabilities, over the %d a plugin accepts", what, n, maxPluginMessage)
	}
	return nil
}

// AnswerFunc answers one request of a handler to the client, for the
// in-process helpers (Plugin.CallTool, Plugin.ReadResource,
// Plugin.GetPrompt): method is sampling/createMessage, elicitation/create
// or roots/list, params its MCP params (nil for roots/list), and the answer
// the MCP result as JSON. An error is the client's refusal: an *InputError
// keeps its code, any other error becomes code -32603 with its text.
type AnswerFunc func(method string, params json.RawMessage) (json.RawMessage, error)

// maxRounds bounds the input rounds of an in-process helper, so that a
// handler that never stops asking fails instead of looping.
const maxRounds = 32

// rounds runs one request of an in-process helper (run) through as many
// input rounds as its handler needs, answering each round's requests with
// answer. An *InputRequiredError is checked as the host checks it; without
// answer, it is returned.
func rounds(what string, answer AnswerFunc, in *Input, run func(*Input) (json.RawMessage, error)) (json.RawMessage, error) {
	for round := 1; ; round++ {
		res, err := run(in)
		var ir *InputRequiredError
		if !errors.As(err, &ir) {
			return res, err
		}
		if err := inputRequired(what, &pluginpb.InputRequired{Requests: ir.Requests, RequestState: ir.State}); answer == nil || !errors.As(err, &ir) {
			return nil, err
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
func answerAll(ir *InputRequiredError, answer AnswerFunc) (*Input, error) {
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
	in := &Input{State: ir.State}
	for _, key := range keys {
		r := requests[key]
		res, err := answer(r.Method, r.Params)
		var ie *InputError
		switch {
		case errors.As(err, &ie):
		case err != nil:
			ie = &InputError{Code: -32603, Message: err.Error()}
		case !isObject(res):
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
