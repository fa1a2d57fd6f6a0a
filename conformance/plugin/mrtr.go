package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/plughost/plughost/pluginproto"
)

// The tools and the prompt of the suite's input-required-result-*
// scenarios (MCP 2026-07-28's multi-round-trip requests, SEP-2322; the
// suite 0.2.0-alpha.12). Each asks the client in input rounds under the
// keys the scenarios expect (one, user_name, is hard-coded in the suite),
// with the messages, schemas and token limits they describe. A retry may
// carry the client's answers without a request state: the SDK serves it
// from the answers alone, ignores answers under keys the fixture did not
// ask, and asks again for one that is not the result it asked for. The
// requestState the scenarios check for is the host's: it seals the
// plugin's state (none in a first round) with its own, and refuses a
// tampered one before the plugin runs.

// The texts of the input-required fixtures.
const (
	multiRoundDone    = "Multi-round complete: %s likes %s"
	capabilitiesNone  = "No declared client capability supports an in-band input request"
	capabilitiesDone  = "Capability-aware input requests fulfilled"
	requestStateDone  = "state-ok: requestState received and confirmation accepted"
	tamperedStateDone = "Confirmation accepted: the requestState was verified"
)

// The forms the input-required fixtures ask the user to fill in.
var (
	nameForm    = formOf("name", "string")
	colorForm   = formOf("color", "string")
	confirmForm = formOf("ok", "boolean")
	contextForm = formOf("context", "string")
)

// formOf is a form of one required field.
func formOf(field, typ string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%q:{"type":%q}},"required":[%q]}`, field, typ, field))
}

// anyObject is the input schema of the input-required fixtures: they take
// no arguments.
var anyObject = json.RawMessage(`{"type":"object"}`)

// The input requests of the fixtures, by their keys.
var (
	askUserName = pluginproto.ElicitParams{Key: "user_name", Message: "What is your name?", RequestedSchema: nameForm}
	askConfirm  = pluginproto.ElicitParams{Key: "confirm", Message: "Please confirm", RequestedSchema: confirmForm}
	askStep1    = pluginproto.ElicitParams{Key: "step1", Message: "Step 1: What is your name?", RequestedSchema: nameForm}
	askStep2    = pluginproto.ElicitParams{Key: "step2", Message: "Step 2: What is your favorite color?", RequestedSchema: colorForm}
	askContext  = pluginproto.ElicitParams{Key: "user_context", Message: "What context should the prompt use?", RequestedSchema: contextForm}
	askCapital  = sampleParams("capital_question", "What is the capital of France?", 100)
	askGreeting = sampleParams("greeting", "Generate a greeting", 50)
	askShort    = sampleParams("greeting", "Generate a short greeting", 50)
)

// rootsKey is the key of every fixture's roots/list request.
const rootsKey = "client_roots"

func sampleParams(key, text string, maxTokens int) pluginproto.SampleParams {
	return pluginproto.SampleParams{
		Key:       key,
		Messages:  []pluginproto.Message{{Role: "user", Content: pluginproto.Text(text)}},
		MaxTokens: maxTokens,
	}
}

// inputRequiredFixtures are the tools of the input-required-result-*
// scenarios.
func inputRequiredFixtures() []fixture {
	return []fixture{
		{name: "test_input_required_result_elicitation", schema: anyObject, handler: irElicitation,
			description: `Asks the user's name (elicitation, key "user_name") and greets them: "Hello, <name>!".`},
		{name: "test_input_required_result_sampling", schema: anyObject, handler: irSampling,
			description: `Asks the client's LLM the capital of France (sampling, key "capital_question") and returns its answer.`},
		{name: "test_input_required_result_list_roots", schema: anyObject, handler: irListRoots,
			description: `Asks for the client's roots (roots/list, key "client_roots") and lists them.`},
		{name: "test_input_required_result_request_state", schema: anyObject, handler: irConfirm(requestStateDone),
			description: `Asks the user to confirm (elicitation, key "confirm") and answers "state-ok" once confirmed.`},
		{name: "test_input_required_result_multiple_inputs", schema: anyObject, handler: irMultipleInputs,
			description: `Asks, in one round, the user's name (user_name), a greeting from the client's LLM (greeting) and the client's roots (client_roots).`},
		{name: "test_input_required_result_multi_round", schema: anyObject, handler: irMultiRound,
			description: `Asks the user's name (step1), then, in a second round, their favorite color (step2).`},
		{name: "test_input_required_result_tampered_state", schema: anyObject, handler: irConfirm(tamperedStateDone),
			description: `Asks the user to confirm (elicitation, key "confirm"); a retry whose requestState was altered is refused by the host.`},
		{name: "test_input_required_result_capabilities", schema: anyObject, handler: irCapabilities,
			description: `Asks, in one round, only what the client declared a capability for: its user's name (user_name), its LLM (greeting), its roots (client_roots).`},
	}
}

// accepted returns the string field of an accepted form, or "" with what
// the user did instead.
func accepted(res *pluginproto.ElicitResult, field string) (value, why string) {
	if res.Action != "accept" {
		return "", "the user chose " + res.Action
	}
	var form map[string]json.RawMessage
	_ = json.Unmarshal(res.Content, &form) // absent or null content: no field
	if err := json.Unmarshal(form[field], &value); err != nil || value == "" {
		return "", fmt.Sprintf("the form has no %s", field)
	}
	return value, ""
}

func irElicitation(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	res, err := req.Elicit(ctx, askUserName)
	if err != nil {
		return asked(err, "elicitation")
	}
	name, why := accepted(res, "name")
	if name == "" {
		return pluginproto.ErrorResult("No name to greet: %s", why), nil
	}
	return pluginproto.TextResult("Hello, " + name + "!"), nil
}

func irSampling(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	res, err := req.Sample(ctx, askCapital)
	if err != nil {
		return asked(err, "sampling")
	}
	return pluginproto.TextResult("Sampling response: " + res.Text()), nil
}

func irListRoots(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	roots, err := req.RootsKeyed(ctx, rootsKey)
	if err != nil {
		return asked(err, "roots")
	}
	return pluginproto.TextResult(fmt.Sprintf("Client exposed %d root(s): %s", len(roots), uris(roots))), nil
}

func uris(roots []pluginproto.Root) string {
	var out []string
	for _, r := range roots {
		out = append(out, r.URI)
	}
	return strings.Join(out, ", ")
}

// irConfirm returns a fixture that asks the user to confirm and answers
// done once they have.
func irConfirm(done string) pluginproto.Handler {
	return func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		res, err := req.Elicit(ctx, askConfirm)
		if err != nil {
			return asked(err, "elicitation")
		}
		if res.Action != "accept" {
			return pluginproto.ErrorResult("Not confirmed: the user chose %s", res.Action), nil
		}
		return pluginproto.TextResult(done), nil
	}
}

func irMultipleInputs(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	// The three requests are made before any answer is looked at, so that
	// they go to the client together, in one round.
	name, errName := req.Elicit(ctx, askUserName)
	greeting, errGreeting := req.Sample(ctx, askGreeting)
	roots, errRoots := req.RootsKeyed(ctx, rootsKey)
	if err := firstError(errName, errGreeting, errRoots); err != nil {
		return asked(err, "input")
	}
	who, why := accepted(name, "name")
	if who == "" {
		return pluginproto.ErrorResult("No name: %s", why), nil
	}
	return pluginproto.TextResult(fmt.Sprintf("%s %s — %d root(s) visible", greeting.Text(), who, len(roots))), nil
}

// firstError returns the first error that is not ErrInputRequired, else
// the first error.
func firstError(errs ...error) error {
	var first error
	for _, err := range errs {
		switch {
		case err == nil:
		case !errors.Is(err, pluginproto.ErrInputRequired):
			return err
		case first == nil:
			first = err
		}
	}
	return first
}

func irMultiRound(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	// step2 is asked only once step1 is answered: the second round's
	// retry carries step2's answer alone, and step1's comes back in the
	// SDK's request state.
	res, err := req.Elicit(ctx, askStep1)
	if err != nil {
		return asked(err, "elicitation")
	}
	name, why := accepted(res, "name")
	if name == "" {
		return pluginproto.ErrorResult("Step 1 has no name: %s", why), nil
	}
	res, err = req.Elicit(ctx, askStep2)
	if err != nil {
		return asked(err, "elicitation")
	}
	color, why := accepted(res, "color")
	if color == "" {
		return pluginproto.ErrorResult("Step 2 has no color: %s", why), nil
	}
	return pluginproto.TextResult(fmt.Sprintf(multiRoundDone, name, color)), nil
}

func irCapabilities(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	// Each request the client did not declare the capability for fails at
	// once with ErrClientUnsupported, asking nothing; the others go to the
	// client together, in one round.
	_, errName := req.Elicit(ctx, askUserName)
	_, errGreeting := req.Sample(ctx, askShort)
	_, errRoots := req.RootsKeyed(ctx, rootsKey)
	var declared []error
	for _, err := range []error{errName, errGreeting, errRoots} {
		if !errors.Is(err, pluginproto.ErrClientUnsupported) {
			declared = append(declared, err)
		}
	}
	if len(declared) == 0 {
		return pluginproto.TextResult(capabilitiesNone), nil
	}
	if err := firstError(declared...); err != nil {
		return asked(err, "input")
	}
	return pluginproto.TextResult(capabilitiesDone), nil
}

// addInputRequiredPrompt adds the prompt of the
// input-required-result-non-tool-request scenario: it asks the user for
// context (elicitation, key "user_context") and renders it.
func addInputRequiredPrompt(p *pluginproto.Plugin) {
	p.AddPrompt(pluginproto.Prompt{
		Name:        "test_input_required_result_prompt",
		Description: `Asks the user for context (elicitation, key "user_context") and renders a message with it.`,
	}, func(ctx context.Context, g *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
		res, err := g.Elicit(ctx, askContext)
		if err != nil {
			return nil, err // ErrInputRequired, or the get fails with the cause
		}
		text, why := accepted(res, "context")
		if text == "" {
			return nil, fmt.Errorf("no context to render: %s", why)
		}
		return &pluginproto.PromptResult{
			Description: "A prompt rendered with the context the user gave",
			Messages:    []pluginproto.Message{{Role: "user", Content: pluginproto.Text("Context: " + text)}},
		}, nil
	})
}
