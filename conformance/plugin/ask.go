package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plughost/plughost/pluginproto"
)

// The tools that ask the client something while they run, as the suite's
// tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults
// and elicitation-sep1330-enums scenarios describe them.

// askFixtures are the tools that ask the client.
func askFixtures() []fixture {
	return []fixture{
		{name: "test_sampling", description: "Asks the client's LLM to answer the prompt (sampling) and returns its answer.",
			schema:  json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`),
			handler: sampling},
		{name: "test_elicitation", description: "Asks the user for a username and an email (elicitation) and returns the answer.",
			schema:  json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`),
			handler: elicitation},
		{name: "test_elicitation_sep1034_defaults", description: "Asks the user for a form whose every field has a default (SEP-1034).",
			handler: elicitForm("Test client default value handling - please accept with defaults", defaultsSchema)},
		{name: "test_elicitation_sep1330_enums", description: "Asks the user for a form with every kind of enum field (SEP-1330).",
			handler: elicitForm("Test enum schema variants - please choose", enumsSchema)},
	}
}

func sampling(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct {
		Prompt string `json:"prompt"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	res, err := req.Sample(ctx, pluginproto.SampleParams{
		Messages:  []pluginproto.Message{{Role: "user", Content: pluginproto.Text(args.Prompt)}},
		MaxTokens: 100,
	})
	if err != nil {
		return asked(err, "sampling")
	}
	return pluginproto.TextResult("LLM response: " + res.Text()), nil
}

func elicitation(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct {
		Message string `json:"message"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	res, err := req.Elicit(ctx, pluginproto.ElicitParams{Message: args.Message, RequestedSchema: json.RawMessage(`{
		"type": "object",
		"properties": {
			"username": {"type": "string", "description": "User's response"},
			"email": {"type": "string", "description": "User's email address"}
		},
		"required": ["username", "email"]}`)})
	if err != nil {
		return asked(err, "elicitation")
	}
	return pluginproto.TextResult(fmt.Sprintf("User response: <action: %s, content: %s>", res.Action, content(res))), nil
}

// elicitForm returns a tool that asks the user to fill in schema and
// returns the answer.
func elicitForm(message, schema string) pluginproto.Handler {
	return func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		res, err := req.Elicit(ctx, pluginproto.ElicitParams{Message: message, RequestedSchema: json.RawMessage(schema)})
		if err != nil {
			return asked(err, "elicitation")
		}
		return pluginproto.TextResult(fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, content(res))), nil
	}
}

// asked is the answer of a tool whose request to the client failed: the
// error itself while the client's answer is awaited (the SDK asks and runs
// the tool again), else an isError result naming the cause.
func asked(err error, what string) (*pluginproto.Result, error) {
	if errors.Is(err, pluginproto.ErrInputRequired) {
		return nil, err
	}
	return pluginproto.ErrorResult("%s failed: %v", what, err), nil
}

func content(res *pluginproto.ElicitResult) string {
	if len(res.Content) == 0 {
		return "{}"
	}
	return string(res.Content)
}

const defaultsSchema = `{
	"type": "object",
	"properties": {
		"name": {"type": "string", "description": "User name", "default": "John Doe"},
		"age": {"type": "integer", "description": "User age", "default": 30},
		"score": {"type": "number", "description": "User score", "default": 95.5},
		"status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
		"verified": {"type": "boolean", "description": "Verification status", "default": true}
	},
	"required": []}`

const enumsSchema = `{
	"type": "object",
	"properties": {
		"untitledSingle": {"type": "string", "description": "Untitled single-select", "enum": ["option1", "option2", "option3"]},
		"titledSingle": {"type": "string", "description": "Titled single-select", "oneOf": [
			{"const": "value1", "title": "First Option"},
			{"const": "value2", "title": "Second Option"},
			{"const": "value3", "title": "Third Option"}]},
		"legacyEnum": {"type": "string", "description": "Legacy titled enum", "enum": ["opt1", "opt2", "opt3"],
			"enumNames": ["Option One", "Option Two", "Option Three"]},
		"untitledMulti": {"type": "array", "description": "Untitled multi-select",
			"items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
		"titledMulti": {"type": "array", "description": "Titled multi-select", "items": {"anyOf": [
			{"const": "value1", "title": "First Choice"},
			{"const": "value2", "title": "Second Choice"},
			{"const": "value3", "title": "Third Choice"}]}}
	},
	"required": []}`
