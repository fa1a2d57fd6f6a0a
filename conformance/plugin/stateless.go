package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/plughost/plughost/pluginproto"
)

// The tools the suite's 2026-07-28 scenarios call besides the ordinary
// ones (the suite 0.2.0-alpha.12): server-stateless's diagnostic tools (a
// tool that needs sampling, one that elicits, one that logs, and the
// triggers of list changes) and http-custom-header-server-validation's
// tool with an x-mcp-header parameter.

// The names of the tool and the prompt the triggers add and remove.
const (
	dynamicTool   = "test_dynamic_tool"
	dynamicPrompt = "test_dynamic_prompt"
)

// The texts of the stateless fixtures.
const (
	dynamicToolText   = "This tool comes and goes with test_trigger_tool_change."
	dynamicPromptText = "This prompt comes and goes with test_trigger_prompt_change."
	loggingToolText   = "Logged 2 info and 1 warning messages"
)

// The messages test_logging_tool logs, in order, at their levels.
var statelessLogs = []struct {
	level   pluginproto.Level
	message string
}{
	{pluginproto.LevelInfo, "test_logging_tool started"},
	{pluginproto.LevelWarning, "test_logging_tool: this is a warning for testing"},
	{pluginproto.LevelInfo, "test_logging_tool finished"},
}

// headerParamSchema is test_header_param's input schema: one required
// string property that clients mirror in the Mcp-Param-Region header
// (SEP-2243). No enum or pattern, so that it takes any string.
const headerParamSchema = `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region",` +
	`"description":"The region to report; clients send it in the Mcp-Param-Region header too."}},"required":["region"]}`

// missingCapabilityParams is what test_missing_capability asks the
// client's LLM.
var missingCapabilityParams = pluginproto.SampleParams{
	Messages:  []pluginproto.Message{{Role: "user", Content: pluginproto.Text("Say hello.")}},
	MaxTokens: 10,
}

// streamingForm is test_streaming_elicitation's form.
var streamingForm = pluginproto.ElicitParams{
	Message:         "What is your name?",
	RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"Your name"}},"required":["name"]}`),
}

// changes is the state of the triggers: whether the dynamic tool and the
// dynamic prompt are there now (neither is at start).
type changes struct {
	p      *pluginproto.Plugin
	mu     sync.Mutex
	tool   bool
	prompt bool
}

// statelessFixtures are the tools of the 2026-07-28 scenarios; the
// triggers change p's lists.
func statelessFixtures(p *pluginproto.Plugin) []fixture {
	c := &changes{p: p}
	changesLists := &pluginproto.Annotations{ReadOnlyHint: new(false), DestructiveHint: new(false), IdempotentHint: new(false), OpenWorldHint: new(false)}
	return []fixture{
		{name: "test_missing_capability", handler: missingCapability,
			description: "Needs sampling: asks the client's LLM to say hello (10 tokens) and returns its answer. A client that did not declare sampling is told the tool needs it (-32021 at 2026-07-28)."},
		{name: "test_streaming_elicitation", handler: streamingElicitation,
			description: "Asks the user's name (elicitation, a form with one string field) in an input round, at once, and returns the answer. A client that did not declare elicitation is told the tool needs it."},
		{name: "test_logging_tool", handler: loggingTool,
			description: "Logs two info messages and a warning, then returns at once. At 2026-07-28 they reach only a client that set a log level in the request's _meta."},
		{name: "test_trigger_tool_change", handler: c.toggleTool, annotations: changesLists,
			description: "Adds the tool test_dynamic_tool when it is absent, removes it when present: the tool list changes on every call."},
		{name: "test_trigger_prompt_change", handler: c.togglePrompt, annotations: changesLists,
			description: "Adds the prompt test_dynamic_prompt when it is absent, removes it when present: the prompt list changes on every call."},
		{name: "test_header_param", schema: json.RawMessage(headerParamSchema), handler: headerParam,
			description: "Returns the region it is given. Its region parameter has x-mcp-header Region: a 2026-07-28 client sends it in the Mcp-Param-Region header too (SEP-2243)."},
	}
}

func missingCapability(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	res, err := req.Sample(ctx, missingCapabilityParams)
	if err != nil {
		// ErrInputRequired: asked, the tool runs again with the answer;
		// ErrClientUnsupported: the client is told the tool needs
		// sampling; the client's refusal: an isError result.
		return nil, err
	}
	return pluginproto.TextResult("LLM response: " + res.Text()), nil
}

func streamingElicitation(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	res, err := req.Elicit(ctx, streamingForm)
	if err != nil {
		return nil, err // as missingCapability's
	}
	return pluginproto.TextResult(fmt.Sprintf("Elicitation answered: action=%s, content=%s", res.Action, content(res))), nil
}

func loggingTool(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	for _, l := range statelessLogs {
		req.Log(l.level, l.message)
	}
	return pluginproto.TextResult(loggingToolText), nil
}

// toggleTool adds the dynamic tool, or removes it.
func (c *changes) toggleTool(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tool = !c.tool
	if !c.tool {
		c.p.RemoveTool(dynamicTool)
		return pluginproto.TextResult("Removed the tool " + dynamicTool + ": the tool list changed"), nil
	}
	c.p.AddTool(pluginproto.Tool{
		Name: dynamicTool, Description: "A tool test_trigger_tool_change adds and removes; returns a fixed text.",
		InputSchema: noArguments, Annotations: readOnly,
	}, constant(pluginproto.TextResult(dynamicToolText)))
	return pluginproto.TextResult("Added the tool " + dynamicTool + ": the tool list changed"), nil
}

// togglePrompt adds the dynamic prompt, or removes it.
func (c *changes) togglePrompt(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prompt = !c.prompt
	if !c.prompt {
		c.p.RemovePrompt(dynamicPrompt)
		return pluginproto.TextResult("Removed the prompt " + dynamicPrompt + ": the prompt list changed"), nil
	}
	c.p.AddPrompt(pluginproto.Prompt{Name: dynamicPrompt, Description: "A prompt test_trigger_prompt_change adds and removes."},
		func(context.Context, *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
			return &pluginproto.PromptResult{Messages: []pluginproto.Message{{Role: "user", Content: pluginproto.Text(dynamicPromptText)}}}, nil
		})
	return pluginproto.TextResult("Added the prompt " + dynamicPrompt + ": the prompt list changed"), nil
}

func headerParam(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct {
		Region string `json:"region"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	return pluginproto.TextResult("region: " + args.Region), nil
}
