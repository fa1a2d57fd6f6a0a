package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// noCaps is the clientCapabilities server-stateless declares: none.
var noCaps = json.RawMessage(`{}`)

// capabilityRequired returns err's *CapabilityRequiredError, or fails.
func capabilityRequired(t *testing.T, what string, res json.RawMessage, err error) *pluginproto.CapabilityRequiredError {
	t.Helper()
	var cr *pluginproto.CapabilityRequiredError
	if !errors.As(err, &cr) {
		t.Fatalf("%s = %s, %v; want a *CapabilityRequiredError", what, res, err)
	}
	return cr
}

// test_missing_capability needs sampling: without it the call says so
// ({"sampling":{}}, which the host answers -32021); with it, one round of
// sampling and the LLM's answer.
func TestMissingCapability(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	for _, caps := range []json.RawMessage{nil, noCaps, json.RawMessage(`{"elicitation":{},"roots":{}}`)} {
		res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "test_missing_capability", Arguments: noCaps, ClientCapabilities: caps})
		if cr := capabilityRequired(t, "without sampling", res, err); string(cr.Capabilities) != `{"sampling":{}}` ||
			!strings.Contains(cr.Message, "sampling") {
			t.Errorf("capabilities %s, message %q; want {\"sampling\":{}} and a message naming sampling", cr.Capabilities, cr.Message)
		}
	}

	req := &pluginhost.CallRequest{Tool: "test_missing_capability", Arguments: noCaps, ClientCapabilities: suiteCaps}
	res, err := pluginhost.Of(p).CallTool(t.Context(), req)
	ir := needsInput(t, "with sampling", res, err)
	sameJSON(t, "the round's requests",
		`{"1":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Say hello."}}],"maxTokens":10}}}`,
		ir.Requests)
	req.Input = &pluginhost.Input{Responses: json.RawMessage(`{"1":` + llmSays("Hello!") + `}`), State: ir.State}
	res, err = pluginhost.Of(p).CallTool(t.Context(), req)
	if got := text(t, "the retry", res, err); got != "LLM response: Hello!" {
		t.Errorf("the retry = %q, want %q", got, "LLM response: Hello!")
	}
}

// test_streaming_elicitation answers at once with one elicitation request
// (an input round, never a request of its own), and the answer once the
// user gave it; without elicitation the call says it needs it.
func TestStreamingElicitation(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "test_streaming_elicitation", Arguments: noCaps, ClientCapabilities: noCaps})
	if cr := capabilityRequired(t, "without elicitation", res, err); string(cr.Capabilities) != `{"elicitation":{}}` {
		t.Errorf("capabilities %s, want {\"elicitation\":{}}", cr.Capabilities)
	}

	req := &pluginhost.CallRequest{Tool: "test_streaming_elicitation", Arguments: noCaps, ClientCapabilities: json.RawMessage(`{"elicitation":{}}`)}
	res, err = pluginhost.Of(p).CallTool(t.Context(), req)
	ir := needsInput(t, "with elicitation", res, err)
	sameJSON(t, "the round's requests",
		`{"1":{"method":"elicitation/create","params":{"message":"What is your name?",`+
			`"requestedSchema":{"type":"object","properties":{"name":{"type":"string","description":"Your name"}},"required":["name"]}}}}`,
		ir.Requests)
	req.Input = &pluginhost.Input{Responses: json.RawMessage(`{"1":` + acceptForm(`{"name":"Alice"}`) + `}`), State: ir.State}
	res, err = pluginhost.Of(p).CallTool(t.Context(), req)
	if got, want := text(t, "the retry", res, err), `Elicitation answered: action=accept, content={"name":"Alice"}`; got != want {
		t.Errorf("the retry = %q, want %q", got, want)
	}
}

// test_logging_tool logs at info and warning, and returns at once.
func TestLoggingTool(t *testing.T) {
	t.Parallel()
	type logged struct{ Level, Data string }
	var mu sync.Mutex
	var got []logged
	r := call(t, t.Context(), &pluginhost.CallRequest{Tool: "test_logging_tool", Log: func(level, _ string, data json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, logged{level, string(data)})
	}})
	want := []logged{
		{"info", `"test_logging_tool started"`},
		{"warning", `"test_logging_tool: this is a warning for testing"`},
		{"info", `"test_logging_tool finished"`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(result{Content: []block{{Type: "text", Text: loggingToolText}}}, r); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// namesOf returns the "name" of each of objects.
func namesOf(t *testing.T, objects []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, raw := range objects {
		var o struct{ Name string }
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o.Name)
	}
	return out
}

// Each call of a trigger adds its dynamic tool (prompt) when absent and
// removes it when present, so that every call changes the list; the
// dynamic tool and prompt work while they are there.
func TestTriggersChangeTheLists(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	startTools, startPrompts := namesOf(t, p.Tools()), namesOf(t, p.Prompts())
	if slices.Contains(startTools, dynamicTool) || slices.Contains(startPrompts, dynamicPrompt) {
		t.Fatalf("at start: tools %v, prompts %v; want neither dynamic one", startTools, startPrompts)
	}
	trigger := func(name string) string {
		t.Helper()
		res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: name, Arguments: noCaps, ClientCapabilities: noCaps})
		return text(t, name, res, err)
	}
	for round := range 3 {
		added := round%2 == 0
		verb := map[bool]string{true: "Added", false: "Removed"}[added]

		if got, want := trigger("test_trigger_tool_change"), verb+" the tool test_dynamic_tool: the tool list changed"; got != want {
			t.Errorf("round %d: trigger = %q, want %q", round, got, want)
		}
		if got := namesOf(t, p.Tools()); slices.Contains(got, dynamicTool) != added || len(got) != len(startTools)+map[bool]int{true: 1}[added] {
			t.Errorf("round %d: tools %v; want the start's, with %s: %v", round, got, dynamicTool, added)
		}
		if added {
			res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: dynamicTool})
			if got := text(t, dynamicTool, res, err); got != dynamicToolText {
				t.Errorf("%s = %q", dynamicTool, got)
			}
		}

		if got, want := trigger("test_trigger_prompt_change"), verb+" the prompt test_dynamic_prompt: the prompt list changed"; got != want {
			t.Errorf("round %d: trigger = %q, want %q", round, got, want)
		}
		if got := namesOf(t, p.Prompts()); slices.Contains(got, dynamicPrompt) != added || len(got) != len(startPrompts)+map[bool]int{true: 1}[added] {
			t.Errorf("round %d: prompts %v; want the start's, with %s: %v", round, got, dynamicPrompt, added)
		}
		if added {
			res, err := pluginhost.Of(p).GetPrompt(t.Context(), &pluginhost.PromptRequest{Name: dynamicPrompt})
			sameJSON(t, dynamicPrompt, `{"messages":[{"role":"user","content":{"type":"text","text":"`+dynamicPromptText+`"}}]}`, res)
			if err != nil {
				t.Error(err)
			}
		}
	}
}

func TestHeaderParam(t *testing.T) {
	t.Parallel()
	for _, region := range []string{"us-west1", "Hello", "SGVsbG8=", "=?base64?SGVsbG8=", "test-default"} {
		args, _ := json.Marshal(map[string]string{"region": region})
		if got := call(t, t.Context(), &pluginhost.CallRequest{Tool: "test_header_param", Arguments: args}); !cmp.Equal(got, result{Content: []block{{Type: "text", Text: "region: " + region}}}) {
			t.Errorf("region %q: result %+v", region, got)
		}
	}
}

// plugin is the conformance plugin as a provider of the host's catalog,
// its calls run in-process.
type plugin struct{ p *pluginproto.Plugin }

func (pl plugin) Name() string { return "conformance" }

func (pl plugin) Tools() []tool.Def {
	var defs []tool.Def
	for _, raw := range pl.p.Tools() {
		var t struct{ Name string }
		_ = json.Unmarshal(raw, &t)
		defs = append(defs, tool.Def{Name: t.Name, JSON: raw})
	}
	return defs
}

func (pl plugin) CallTool(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
	return pluginhost.Of(pl.p).CallTool(ctx, &pluginhost.CallRequest{Tool: c.Name, Arguments: c.Arguments, ClientCapabilities: c.ClientCapabilities})
}

// What the suite's 2026-07-28 scenarios read of tools/list holds once the
// host's catalog has the plugin: every definition is served as the plugin
// published it (the x-mcp-header of test_header_param, every JSON Schema
// keyword of json_schema_2020_12_tool); in the catalog's order (by name),
// the first tool with an x-mcp-header property is test_header_param, and
// its first such property is a string; the first tool runs with {} (the
// http-header-validation scenario calls it so) to a result, not a
// protocol error; and the catalog checks json_schema_2020_12_tool's
// arguments by its 2020-12 schema.
func TestToolsAsTheCatalogServesThem(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	cat := catalog.New(&catalog.Options{Logger: hclog.NewNullLogger()})
	defer cat.Close()
	cat.Set(plugin{p})
	listed, next, err := cat.ListTools("")
	if err != nil || next != "" {
		t.Fatalf("ListTools: next %q, %v", next, err)
	}
	published := make(map[string]json.RawMessage)
	for _, raw := range p.Tools() {
		var d struct{ Name string }
		_ = json.Unmarshal(raw, &d)
		published[d.Name] = raw
	}
	type def struct {
		Name        string
		InputSchema struct {
			Properties map[string]json.RawMessage
		}
	}
	firstHeaderTool := ""
	for _, raw := range listed {
		var d def
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw, published[d.Name]) {
			t.Errorf("tool %s is served as\n%s\nbut was published as\n%s", d.Name, raw, published[d.Name])
		}
		for _, prop := range d.InputSchema.Properties {
			if firstHeaderTool == "" && bytes.Contains(prop, []byte(`"x-mcp-header"`)) {
				firstHeaderTool = d.Name
			}
		}
	}
	if firstHeaderTool != "test_header_param" {
		t.Errorf("the first tool with an x-mcp-header property is %q, want test_header_param", firstHeaderTool)
	}
	var header def
	_ = json.Unmarshal(published["test_header_param"], &header)
	var region struct {
		Type   string `json:"type"`
		Header string `json:"x-mcp-header"`
	}
	if err := json.Unmarshal(header.InputSchema.Properties["region"], &region); err != nil || region != (struct {
		Type   string `json:"type"`
		Header string `json:"x-mcp-header"`
	}{"string", "Region"}) || len(header.InputSchema.Properties) != 1 {
		t.Errorf("test_header_param's properties %s; want one, region, a string with x-mcp-header Region", published["test_header_param"])
	}

	var first def
	_ = json.Unmarshal(listed[0], &first)
	if _, err := cat.CallTool(t.Context(), &tool.Call{Name: first.Name, Arguments: noCaps}); err != nil {
		if _, rpcErr := tool.Outcome(err); rpcErr != nil {
			t.Errorf("the first tool, %s, called with {}: %v; want a result (isError or not)", first.Name, err)
		}
	}

	for args, valid := range map[string]bool{
		`{"name":"Ada","address":{"city":"London"},"email":"ada@example.com"}`: true,
		`{"contactMethod":"phone","phone":"555"}`:                              true,
		`{"contactMethod":"email","email":"ada@example.com"}`:                  true,
		`{}`:                                    false, // neither phone nor email
		`{"contactMethod":"phone","email":"x"}`: false, // then: phone
		`{"phone":"555"}`:                       false, // else: email
		`{"email":"x","extra":1}`:               false, // additionalProperties
		`{"email":"x","address":{"city":1}}`:    false, // $ref to $defs.address
	} {
		res, err := cat.CallTool(t.Context(), &tool.Call{Name: "json_schema_2020_12_tool", Arguments: json.RawMessage(args)})
		if got := err == nil; got != valid {
			t.Errorf("json_schema_2020_12_tool %s: %s, %v; want valid %v", args, res, err, valid)
		}
		if !valid && !errors.Is(err, tool.ErrBadArguments) {
			t.Errorf("json_schema_2020_12_tool %s: error %v, want tool.ErrBadArguments", args, err)
		}
	}
}

// json_schema_2020_12_tool's schema has every keyword the json-schema-2020-12
// scenario checks, in 0.1.16 ($schema, $defs.address, additionalProperties
// false) and in 0.2.0-alpha.12 (allOf holding an anyOf; if, then and else;
// $anchor in $defs.address).
func TestJSONSchema2020Keywords(t *testing.T) {
	t.Parallel()
	var s struct {
		Schema               string                     `json:"$schema"`
		Defs                 map[string]json.RawMessage `json:"$defs"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
		AllOf                []struct {
			AnyOf []json.RawMessage `json:"anyOf"`
		} `json:"allOf"`
		If, Then, Else json.RawMessage
	}
	var schema json.RawMessage
	for _, raw := range newPlugin().Tools() {
		var d struct {
			Name        string
			InputSchema json.RawMessage
		}
		_ = json.Unmarshal(raw, &d)
		if d.Name == "json_schema_2020_12_tool" {
			schema = d.InputSchema
		}
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatal(err)
	}
	var address struct {
		Anchor string `json:"$anchor"`
	}
	_ = json.Unmarshal(s.Defs["address"], &address)
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" || s.AdditionalProperties == nil || *s.AdditionalProperties ||
		len(s.AllOf) == 0 || len(s.AllOf[0].AnyOf) == 0 || s.If == nil || s.Then == nil || s.Else == nil || address.Anchor == "" {
		t.Errorf("json_schema_2020_12_tool's inputSchema lacks a keyword the scenario checks: %s", schema)
	}
}
