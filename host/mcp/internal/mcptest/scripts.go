package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/plughost/plughost/host/tool"
)

// The input scripts: providers that need the client's input. Each is
// served as a tool, a resource (input://<name>) and a prompt of its name.
// Run without input, a script answers a *tool.InputRequired; run again
// with the client's answers (tool.Input), it goes on or finishes with a
// text. When a request it needs got an InputError, it fails naming it
// ("<key>: error <code>: <message>"), as a provider answers an isError
// result.
//
//	sample        asks sampling/createMessage (SamplingParamsNoTools) as
//	              "q": "the model said: <text>"
//	sample_tools  the same with tools and toolChoice (SamplingParams)
//	survey        asks elicitation/create for a name ("name"), then in a
//	              second round for a color ("color"): "name=N color=C"
//	roots         asks roots/list ("r"): "roots: URI,URI"
//	everything    asks roots/list, sampling and form elicitation at once
//	              (keys a_roots, b_sample, c_elicit): "KEY: ok" or
//	              "KEY: error CODE: MESSAGE" per key, never failing
//	url           asks URL elicitation ("u"): "url: ACTION"
//	insist        asks sampling ("q") again on every round, forever
//	sample_20ms   asks as sample, from a call whose time limit is 20ms
//	malformed     asks tools/call of the client
//	shapeless     asks with requests that are not a JSON object
//
// Every InputRequired names ScriptProvider, as the real catalog stamps the
// provider that asked; a retry whose Input names another provider is
// refused (tool.ErrRefused), as the catalog refuses one that would reach
// another provider (one naming none and carrying no state passes, as
// there). LastInput is the Input of the last retry.
var scripts = map[string]func(in *tool.Input) (string, bool, *tool.InputRequired){
	"sample":       sampleScript(SamplingParamsNoTools),
	"sample_tools": sampleScript(SamplingParams),
	"survey":       surveyScript,
	"roots": func(in *tool.Input) (string, bool, *tool.InputRequired) {
		if in == nil {
			return ask("roots", `{"r":{"method":"roots/list"}}`)
		}
		if msg, bad := inputError(in, "r"); bad {
			return msg, true, nil
		}
		var res struct{ Roots []struct{ URI string } }
		json.Unmarshal(response(in, "r"), &res)
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return "roots: " + strings.Join(uris, ","), false, nil
	},
	"everything": func(in *tool.Input) (string, bool, *tool.InputRequired) {
		if in == nil {
			return ask("everything", `{"c_elicit":{"method":"elicitation/create","params":`+elicitName+`},`+
				`"a_roots":{"method":"roots/list","params":{}},"b_sample":{"method":"sampling/createMessage","params":`+SamplingParamsNoTools+`}}`)
		}
		var lines []string
		for _, key := range []string{"a_roots", "b_sample", "c_elicit"} {
			if msg, bad := inputError(in, key); bad {
				lines = append(lines, msg)
			} else if response(in, key) != nil {
				lines = append(lines, key+": ok")
			} else {
				lines = append(lines, key+": no answer")
			}
		}
		return strings.Join(lines, "; "), false, nil
	},
	"url": func(in *tool.Input) (string, bool, *tool.InputRequired) {
		if in == nil {
			return ask("url", `{"u":{"method":"elicitation/create","params":{"mode":"url","message":"Sign in, please",`+
				`"url":"https://example.com/login","elicitationId":"e1"}}}`)
		}
		if msg, bad := inputError(in, "u"); bad {
			return msg, true, nil
		}
		var res struct{ Action string }
		json.Unmarshal(response(in, "u"), &res)
		return "url: " + res.Action, false, nil
	},
	"sample_20ms": func(in *tool.Input) (string, bool, *tool.InputRequired) {
		text, failed, ir := sampleScript(SamplingParamsNoTools)(in)
		if ir != nil {
			ir.Timeout = 20 * time.Millisecond
		}
		return text, failed, ir
	},
	"insist": func(*tool.Input) (string, bool, *tool.InputRequired) {
		return ask("insist", `{"q":{"method":"sampling/createMessage","params":`+SamplingParamsNoTools+`}}`)
	},
	"malformed": func(*tool.Input) (string, bool, *tool.InputRequired) {
		return ask("malformed", `{"x":{"method":"tools/call","params":{"name":"echo"}}}`)
	},
	"shapeless": func(*tool.Input) (string, bool, *tool.InputRequired) {
		return ask("shapeless", `[{"method":"roots/list"}]`)
	},
}

// ScriptNames are the input scripts, in name order.
var ScriptNames = []string{"everything", "insist", "malformed", "roots", "sample", "sample_20ms", "sample_tools", "shapeless", "survey", "url"}

// Elicitation params of the survey: a form asking for one string.
const (
	elicitName  = `{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`
	elicitColor = `{"message":"Your favourite color?","requestedSchema":{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}}`
)

// ScriptProvider is the provider the input scripts' InputRequired name.
const ScriptProvider = "mcptest-scripts"

func ask(state, requests string) (string, bool, *tool.InputRequired) {
	return "", false, &tool.InputRequired{Requests: json.RawMessage(requests), State: state, Provider: ScriptProvider}
}

func sampleScript(params string) func(in *tool.Input) (string, bool, *tool.InputRequired) {
	return func(in *tool.Input) (string, bool, *tool.InputRequired) {
		if in == nil {
			return ask("sample", `{"q":{"method":"sampling/createMessage","params":`+params+`}}`)
		}
		if msg, bad := inputError(in, "q"); bad {
			return msg, true, nil
		}
		var res struct {
			Content struct{ Text string }
		}
		json.Unmarshal(response(in, "q"), &res)
		return "the model said: " + res.Content.Text, false, nil
	}
}

func surveyScript(in *tool.Input) (string, bool, *tool.InputRequired) {
	var answer struct {
		Action  string
		Content map[string]any
	}
	switch {
	case in == nil:
		return ask("survey-1", `{"name":{"method":"elicitation/create","params":`+elicitName+`}}`)
	case in.State == "survey-1":
		if msg, bad := inputError(in, "name"); bad {
			return msg, true, nil
		}
		json.Unmarshal(response(in, "name"), &answer)
		if answer.Action != "accept" {
			return "the user did not give a name: " + answer.Action, true, nil
		}
		return ask(fmt.Sprintf("survey-2 %v", answer.Content["name"]), `{"color":{"method":"elicitation/create","params":`+elicitColor+`}}`)
	default:
		name, ok := strings.CutPrefix(in.State, "survey-2 ")
		if !ok {
			return "survey: unexpected state " + in.State, true, nil
		}
		if msg, bad := inputError(in, "color"); bad {
			return msg, true, nil
		}
		json.Unmarshal(response(in, "color"), &answer)
		if answer.Action != "accept" {
			return "the user did not give a color: " + answer.Action, true, nil
		}
		return fmt.Sprintf("name=%s color=%v", name, answer.Content["color"]), false, nil
	}
}

// inputError returns the text naming the InputError of key, if it has one.
func inputError(in *tool.Input, key string) (string, bool) {
	e, ok := in.Errors[key]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%s: error %d: %s", key, e.Code, e.Message), true
}

// response returns the client's result for key, or nil.
func response(in *tool.Input, key string) json.RawMessage {
	var m map[string]json.RawMessage
	json.Unmarshal(in.Responses, &m)
	return m[key]
}

// script runs the input script name.
func (c *Catalog) script(ctx context.Context, name string, in *tool.Input) (text string, failed bool, err error) {
	c.execs.Add(1)
	c.parkMu.Lock()
	c.scriptCtx = ctx
	if in != nil {
		c.lastInput = in
	}
	c.parkMu.Unlock()
	// A retry naming no provider and carrying no state (a stateless
	// client's answers sent without a requestState) is the real catalog's
	// to route; it passes.
	if in != nil && in.Provider != ScriptProvider && (in.Provider != "" || in.State != "") {
		return "", false, tool.Errorf(tool.ErrRefused, "the retry of %q names provider %q, not %q, which asked for the input",
			name, in.Provider, ScriptProvider)
	}
	text, failed, ir := scripts[name](in)
	if ir != nil {
		return "", false, ir
	}
	return text, failed, nil
}

// ScriptRuns counts the runs of input scripts (first runs and retries).
func (c *Catalog) ScriptRuns() int64 { return c.execs.Load() }

// ScriptContext is the context of the last run of an input script: the
// call's, which ends when the call does.
func (c *Catalog) ScriptContext() context.Context {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	return c.scriptCtx
}

// LastInput is the Input of the last retry of an input script, or nil.
func (c *Catalog) LastInput() *tool.Input {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	return c.lastInput
}
