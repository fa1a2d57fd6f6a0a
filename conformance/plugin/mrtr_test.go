package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// suiteCaps are the client capabilities the suite declares in every
// input-required-result scenario but capability-check.
var suiteCaps = json.RawMessage(`{"sampling":{},"elicitation":{},"roots":{"listChanged":true}}`)

// The suite's canned answers (Ui, Wi and Gi in its source): an accepted
// form, an LLM's message, one root.
func acceptForm(content string) string { return `{"action":"accept","content":` + content + `}` }

func llmSays(text string) string {
	return `{"role":"assistant","content":{"type":"text","text":` + quote(text) + `},"model":"test-model","stopReason":"endTurn"}`
}

const testRoot = `{"roots":[{"uri":"file:///test/root","name":"Test Root"}]}`

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The requests the fixtures' first rounds make, by key, as the scenarios
// spec them (but mode "form", which the SDK leaves out: it is optional).
const (
	wantUserName     = `"user_name":{"method":"elicitation/create","params":{"message":"What is your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`
	wantConfirm      = `"confirm":{"method":"elicitation/create","params":{"message":"Please confirm","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}`
	wantClientRoots  = `"client_roots":{"method":"roots/list"}`
	wantGreeting     = `"greeting":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Generate a greeting"}}],"maxTokens":50}}`
	wantShortGreet   = `"greeting":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Generate a short greeting"}}],"maxTokens":50}}`
	wantStep1        = `"step1":{"method":"elicitation/create","params":{"message":"Step 1: What is your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`
	wantStep2        = `"step2":{"method":"elicitation/create","params":{"message":"Step 2: What is your favorite color?","requestedSchema":{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}}}`
	wantCapital      = `"capital_question":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"What is the capital of France?"}}],"maxTokens":100}}`
	wantUserContext  = `"user_context":{"method":"elicitation/create","params":{"message":"What context should the prompt use?","requestedSchema":{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}}}`
	inputRequiredFix = "test_input_required_result_"
)

// sameJSON fails unless got and want are the same JSON value.
func sameJSON(t *testing.T, what string, want string, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want: %v", what, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got %s: %v", what, got, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// needsInput returns err's *InputRequiredError, or fails.
func needsInput(t *testing.T, what string, res json.RawMessage, err error) *pluginproto.InputRequiredError {
	t.Helper()
	var ir *pluginproto.InputRequiredError
	if !errors.As(err, &ir) {
		t.Fatalf("%s = %s, %v; want an *InputRequiredError", what, res, err)
	}
	return ir
}

// text returns the text of a tool's result of one text block that is not
// an error, or fails.
func text(t *testing.T, what string, res json.RawMessage, err error) string {
	t.Helper()
	var r result
	if err != nil || json.Unmarshal(res, &r) != nil || r.IsError || len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("%s = %s, %v; want a text result", what, res, err)
	}
	return r.Content[0].Text
}

// Each fixture's first round asks exactly what its scenario expects; the
// retry with the suite's canned answers (and the round's state) completes
// with the text the scenario describes.
func TestInputRequiredFixtures(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		asks      string // the first round's requests, without braces
		responses string // the retry's
		want      string // the final text
	}{
		"elicitation": {wantUserName, `{"user_name":` + acceptForm(`{"name":"Alice"}`) + `}`, "Hello, Alice!"},
		"sampling": {wantCapital, `{"capital_question":` + llmSays("The capital of France is Paris.") + `}`,
			"Sampling response: The capital of France is Paris."},
		"list_roots":    {wantClientRoots, `{"client_roots":` + testRoot + `}`, "Client exposed 1 root(s): file:///test/root"},
		"request_state": {wantConfirm, `{"confirm":` + acceptForm(`{"ok":true}`) + `}`, requestStateDone},
		"multiple_inputs": {wantUserName + "," + wantGreeting + "," + wantClientRoots,
			`{"client_roots":` + testRoot + `,"greeting":` + llmSays("Hello there!") + `,"user_name":` + acceptForm(`{"name":"Alice"}`) + `}`,
			"Hello there! Alice — 1 root(s) visible"},
		"tampered_state": {wantConfirm, `{"confirm":` + acceptForm(`{"ok":true}`) + `}`, tamperedStateDone},
		"capabilities": {wantUserName + "," + wantShortGreet + "," + wantClientRoots,
			`{"client_roots":` + testRoot + `,"greeting":` + llmSays("Hi!") + `,"user_name":` + acceptForm(`{"name":"Alice"}`) + `}`,
			capabilitiesDone},
	}
	for fixture, tc := range tests {
		t.Run(fixture, func(t *testing.T) {
			t.Parallel()
			p := newPlugin()
			req := &pluginhost.CallRequest{Tool: inputRequiredFix + fixture, Arguments: json.RawMessage(`{}`), ClientCapabilities: suiteCaps}
			res, err := pluginhost.Of(p).CallTool(t.Context(), req)
			ir := needsInput(t, "round 1", res, err)
			sameJSON(t, "round 1's requests", "{"+tc.asks+"}", ir.Requests)
			req.Input = &pluginhost.Input{Responses: json.RawMessage(tc.responses), State: ir.State}
			res, err = pluginhost.Of(p).CallTool(t.Context(), req)
			if got := text(t, "round 2", res, err); got != tc.want {
				t.Errorf("round 2 = %q, want %q", got, tc.want)
			}
		})
	}
}

// With the SDK's helper answering as the suite does, every fixture
// completes.
func TestInputRequiredFixturesWithAnswerInput(t *testing.T) {
	t.Parallel()
	answer := func(method string, params json.RawMessage) (json.RawMessage, error) {
		switch method {
		case "elicitation/create":
			var p struct {
				RequestedSchema struct{ Properties map[string]any }
			}
			if err := json.Unmarshal(params, &p); err != nil {
				return nil, err
			}
			form := map[string]any{"name": "Alice", "color": "blue", "ok": true, "context": "test context"}
			for field := range form {
				if _, ok := p.RequestedSchema.Properties[field]; !ok {
					delete(form, field)
				}
			}
			b, _ := json.Marshal(form)
			return json.RawMessage(acceptForm(string(b))), nil
		case "sampling/createMessage":
			return json.RawMessage(llmSays("Hello there!")), nil
		case "roots/list":
			return json.RawMessage(testRoot), nil
		}
		return nil, fmt.Errorf("unexpected %s", method)
	}
	p := newPlugin()
	for fixture, want := range map[string]string{
		"elicitation":     "Hello, Alice!",
		"sampling":        "Sampling response: Hello there!",
		"list_roots":      "Client exposed 1 root(s): file:///test/root",
		"request_state":   requestStateDone,
		"multiple_inputs": "Hello there! Alice — 1 root(s) visible",
		"multi_round":     "Multi-round complete: Alice likes blue",
		"tampered_state":  tamperedStateDone,
		"capabilities":    capabilitiesDone,
	} {
		res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: inputRequiredFix + fixture, ClientCapabilities: suiteCaps, AnswerInput: answer})
		if got := text(t, fixture, res, err); got != want {
			t.Errorf("%s = %q, want %q", fixture, got, want)
		}
	}
	res, err := pluginhost.Of(p).GetPrompt(t.Context(), &pluginhost.PromptRequest{Name: inputRequiredFix + "prompt", ClientCapabilities: suiteCaps, AnswerInput: answer})
	sameJSON(t, "the prompt", `{"description":"A prompt rendered with the context the user gave",`+
		`"messages":[{"role":"user","content":{"type":"text","text":"Context: test context"}}]}`, res)
	if err != nil {
		t.Errorf("the prompt: %v", err)
	}
}

// multi_round asks step1, then step2 in a second round whose retry
// carries step2's answer alone: the name comes back in the SDK's state.
func TestInputRequiredMultiRound(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	req := &pluginhost.CallRequest{Tool: inputRequiredFix + "multi_round", Arguments: json.RawMessage(`{}`), ClientCapabilities: suiteCaps}
	res, err := pluginhost.Of(p).CallTool(t.Context(), req)
	ir := needsInput(t, "round 1", res, err)
	sameJSON(t, "round 1's requests", "{"+wantStep1+"}", ir.Requests)

	req.Input = &pluginhost.Input{Responses: json.RawMessage(`{"step1":` + acceptForm(`{"name":"Alice"}`) + `}`), State: ir.State}
	res, err = pluginhost.Of(p).CallTool(t.Context(), req)
	ir2 := needsInput(t, "round 2", res, err)
	sameJSON(t, "round 2's requests", "{"+wantStep2+"}", ir2.Requests)
	if ir2.State == "" || ir2.State == ir.State {
		t.Errorf("round 2's state %q (round 1's %q): want a new one, holding the name", ir2.State, ir.State)
	}

	req.Input = &pluginhost.Input{Responses: json.RawMessage(`{"step2":` + acceptForm(`{"color":"blue"}`) + `}`), State: ir2.State}
	res, err = pluginhost.Of(p).CallTool(t.Context(), req)
	if got, want := text(t, "round 3", res, err), "Multi-round complete: Alice likes blue"; got != want {
		t.Errorf("round 3 = %q, want %q", got, want)
	}

	// Without the state the name is lost: step1 is asked again.
	req.Input.State = ""
	res, err = pluginhost.Of(p).CallTool(t.Context(), req)
	sameJSON(t, "round 3 without the state", "{"+wantStep1+"}", needsInput(t, "round 3 without the state", res, err).Requests)
}

// The elicitation fixture serves the scenarios that retry without a
// state: responses alone complete it, unknown keys are ignored, and a
// missing, wrong-keyed or malformed answer is asked for again.
func TestInputRequiredElicitationRetries(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		responses string
		want      string // "": the request is asked again
	}{
		"responses without a state": {`{"user_name":` + acceptForm(`{"name":"Alice"}`) + `}`, "Hello, Alice!"},
		"unknown keys ignored": {`{"user_name":` + acceptForm(`{"name":"Alice"}`) +
			`,"unknown_extra_key":{"action":"accept","content":{"foo":"bar"}},"another_unexpected":{"action":"accept","content":{"baz":123}}}`, "Hello, Alice!"},
		"a wrong key":           {`{"wrong_key":{"action":"accept","content":{"data":"wrong"}}}`, ""},
		"no responses":          {`{}`, ""},
		"null responses":        {`null`, ""},
		"a number, not a form":  {`{"user_name":12345}`, ""},
		"an answer of roots":    {`{"user_name":` + testRoot + `}`, ""},
		"an unknown action":     {`{"user_name":{"action":"ok"}}`, ""},
		"content not an object": {`{"user_name":{"action":"accept","content":"Alice"}}`, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := pluginhost.Of(newPlugin()).CallTool(t.Context(), &pluginhost.CallRequest{
				Tool: inputRequiredFix + "elicitation", Arguments: json.RawMessage(`{}`), ClientCapabilities: suiteCaps,
				Input: &pluginhost.Input{Responses: json.RawMessage(tc.responses)},
			})
			if tc.want == "" {
				sameJSON(t, "the requests", "{"+wantUserName+"}", needsInput(t, "the retry", res, err).Requests)
				return
			}
			if got := text(t, "the retry", res, err); got != tc.want {
				t.Errorf("the retry = %q, want %q", got, tc.want)
			}
		})
	}
}

// A form the user did not fill in (declined, or without the name) ends
// the call with an isError result saying so.
func TestInputRequiredElicitationDeclined(t *testing.T) {
	t.Parallel()
	for responses, want := range map[string]string{
		`{"user_name":{"action":"decline"}}`:                       "No name to greet: the user chose decline",
		`{"user_name":{"action":"accept","content":{"name":""}}}`:  "No name to greet: the form has no name",
		`{"user_name":{"action":"accept","content":{"data":"x"}}}`: "No name to greet: the form has no name",
	} {
		r := call(t, t.Context(), &pluginhost.CallRequest{Tool: inputRequiredFix + "elicitation", ClientCapabilities: suiteCaps,
			Input: &pluginhost.Input{Responses: json.RawMessage(responses)}})
		if !r.IsError || len(r.Content) != 1 || r.Content[0].Text != want {
			t.Errorf("%s: result %+v, want an isError result %q", responses, r, want)
		}
	}
}

// capabilities asks, in one round, only what the client declared.
func TestInputRequiredCapabilities(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		caps string
		asks string // "": a complete result, capabilitiesNone
	}{
		"sampling only (capability-check)": {`{"sampling":{}}`, wantShortGreet},
		"elicitation only":                 {`{"elicitation":{}}`, wantUserName},
		"roots only":                       {`{"roots":{"listChanged":true}}`, wantClientRoots},
		"elicitation and roots":            {`{"elicitation":{"form":{}},"roots":{}}`, wantUserName + "," + wantClientRoots},
		"url elicitation only":             {`{"elicitation":{"url":{}}}`, ""},
		"nothing":                          {`{}`, ""},
		"no capabilities at all":           {``, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := newPlugin()
			req := &pluginhost.CallRequest{Tool: inputRequiredFix + "capabilities", Arguments: json.RawMessage(`{}`), ClientCapabilities: json.RawMessage(tc.caps)}
			res, err := pluginhost.Of(p).CallTool(t.Context(), req)
			if tc.asks == "" {
				if got := text(t, "the call", res, err); got != capabilitiesNone {
					t.Errorf("the call = %q, want %q", got, capabilitiesNone)
				}
				return
			}
			ir := needsInput(t, "round 1", res, err)
			sameJSON(t, "round 1's requests", "{"+tc.asks+"}", ir.Requests)
			// The retry answers every key asked.
			var asked map[string]struct{ Method string }
			if err := json.Unmarshal(ir.Requests, &asked); err != nil {
				t.Fatal(err)
			}
			responses := map[string]json.RawMessage{}
			for key, r := range asked {
				responses[key] = json.RawMessage(map[string]string{
					"elicitation/create":     acceptForm(`{"name":"Alice"}`),
					"sampling/createMessage": llmSays("Hi!"),
					"roots/list":             testRoot,
				}[r.Method])
			}
			b, _ := json.Marshal(responses)
			req.Input = &pluginhost.Input{Responses: b, State: ir.State}
			res, err = pluginhost.Of(p).CallTool(t.Context(), req)
			if got := text(t, "round 2", res, err); got != capabilitiesDone {
				t.Errorf("round 2 = %q, want %q", got, capabilitiesDone)
			}
		})
	}
}

// The prompt asks user_context, and renders the answer.
func TestInputRequiredPrompt(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	req := &pluginhost.PromptRequest{Name: inputRequiredFix + "prompt", ClientCapabilities: suiteCaps}
	res, err := pluginhost.Of(p).GetPrompt(t.Context(), req)
	ir := needsInput(t, "round 1", res, err)
	sameJSON(t, "round 1's requests", "{"+wantUserContext+"}", ir.Requests)
	req.Input = &pluginhost.Input{Responses: json.RawMessage(`{"user_context":` + acceptForm(`{"context":"test context"}`) + `}`), State: ir.State}
	res, err = pluginhost.Of(p).GetPrompt(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "round 2", `{"description":"A prompt rendered with the context the user gave",`+
		`"messages":[{"role":"user","content":{"type":"text","text":"Context: test context"}}]}`, res)

	req.Input = &pluginhost.Input{Responses: json.RawMessage(`{"user_context":{"action":"cancel"}}`)}
	if _, err := pluginhost.Of(p).GetPrompt(t.Context(), req); err == nil || !strings.Contains(err.Error(), "no context to render: the user chose cancel") {
		t.Errorf("a cancelled form: err = %v, want the get to fail saying so", err)
	}
}
