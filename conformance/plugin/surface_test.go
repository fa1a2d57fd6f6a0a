package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/plughost/plughost/internal/pluginhost"
)

func TestResourceFixtures(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	var uris []string
	for _, raw := range p.Resources() {
		var r struct{ URI, Name, Description string }
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if r.Name == "" || r.Description == "" {
			t.Errorf("resource %s: name %q, description %q; the resources-list scenario wants both", r.URI, r.Name, r.Description)
		}
		uris = append(uris, r.URI)
	}
	if diff := cmp.Diff([]string{"test://static-text", "test://static-binary", "test://watched-resource"}, uris); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	for uri, want := range map[string]string{
		"test://static-text":       `{"contents":[{"uri":"test://static-text","mimeType":"text/plain","text":"` + staticText + `"}]}`,
		"test://template/123/data": `{"contents":[{"uri":"test://template/123/data","mimeType":"application/json","text":"{\"id\":\"123\",\"templateTest\":true,\"data\":\"Data for ID: 123\"}"}]}`,
	} {
		got, err := pluginhost.Of(p).ReadResource(t.Context(), &pluginhost.ReadRequest{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if string(got) != want {
			t.Errorf("read %s:\n got %s\nwant %s", uri, got, want)
		}
	}
	got, err := pluginhost.Of(p).ReadResource(t.Context(), &pluginhost.ReadRequest{URI: "test://static-binary"})
	if err != nil || !strings.Contains(string(got), `"blob":"`) || !strings.Contains(string(got), `"mimeType":"image/png"`) {
		t.Errorf("read test://static-binary = %s, %v; want a PNG blob", got, err)
	}
}

func TestPromptFixtures(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	for _, tc := range []struct {
		name, args, want string
	}{
		{"test_simple_prompt", `{}`, `{"messages":[{"role":"user","content":{"type":"text","text":"` + promptText + `"}}]}`},
		{"test_prompt_with_arguments", `{"arg1":"hello","arg2":"world"}`,
			`{"messages":[{"role":"user","content":{"type":"text","text":"Prompt with arguments: arg1='hello', arg2='world'"}}]}`},
		{"test_prompt_with_embedded_resource", `{"resourceUri":"test://example-resource"}`,
			`{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"test://example-resource","mimeType":"text/plain","text":"` + embeddedPrompt + `"}}},` +
				`{"role":"user","content":{"type":"text","text":"Please process the embedded resource above."}}]}`},
	} {
		got, err := pluginhost.Of(p).GetPrompt(t.Context(), &pluginhost.PromptRequest{Name: tc.name, Arguments: json.RawMessage(tc.args)})
		if err != nil {
			t.Fatalf("get %s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("get %s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	got, err := pluginhost.Of(p).GetPrompt(t.Context(), &pluginhost.PromptRequest{Name: "test_prompt_with_image"})
	if err != nil || !strings.Contains(string(got), `"type":"image"`) {
		t.Errorf("get test_prompt_with_image = %s, %v; want an image message", got, err)
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	got, err := pluginhost.Of(newPlugin()).Complete(t.Context(), json.RawMessage(
		`{"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},"argument":{"name":"arg1","value":"par"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"completion":{"values":["paris","park","party"],"total":3}}`; string(got) != want {
		t.Errorf("complete = %s, want %s", got, want)
	}
}

// everything is a client that declared every capability.
var everything = json.RawMessage(`{"sampling":{},"elicitation":{},"roots":{}}`)

func TestAskingFixtures(t *testing.T) {
	t.Parallel()
	p := newPlugin()
	answer := func(method string, params json.RawMessage) (json.RawMessage, error) {
		switch method {
		case "sampling/createMessage":
			if !strings.Contains(string(params), `"text":"What is 2+2?"`) || !strings.Contains(string(params), `"maxTokens":100`) {
				t.Errorf("sampling params %s", params)
			}
			return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"4"},"model":"m"}`), nil
		case "elicitation/create":
			return json.RawMessage(`{"action":"accept","content":{"username":"ada","email":"ada@example.com"}}`), nil
		}
		t.Errorf("unexpected request %s", method)
		return nil, nil
	}
	for _, tc := range []struct{ tool, args, want string }{
		{"test_sampling", `{"prompt":"What is 2+2?"}`, "LLM response: 4"},
		{"test_elicitation", `{"message":"Who are you?"}`, `User response: <action: accept, content: {"username":"ada","email":"ada@example.com"}>`},
		{"test_elicitation_sep1034_defaults", `{}`, `Elicitation completed: action=accept, content={"username":"ada","email":"ada@example.com"}`},
	} {
		res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{
			Tool: tc.tool, Arguments: json.RawMessage(tc.args), ClientCapabilities: everything, AnswerInput: answer,
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		if got := resultText(t, res); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.tool, got, tc.want)
		}
	}
	// A client without the capabilities gets an isError result, and is
	// asked nothing.
	res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{
		Tool: "test_sampling", Arguments: json.RawMessage(`{"prompt":"x"}`), ClientCapabilities: json.RawMessage(`{}`),
		AnswerInput: func(string, json.RawMessage) (json.RawMessage, error) {
			t.Error("a client without sampling was asked")
			return nil, nil
		},
	})
	if err != nil || !strings.Contains(string(res), `"isError":true`) || !strings.Contains(resultText(t, res), "sampling") {
		t.Errorf("test_sampling without the capability = %s, %v; want an isError result naming sampling", res, err)
	}
}

func resultText(t *testing.T, res json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) != 1 {
		t.Fatalf("result %s: %v", res, err)
	}
	return r.Content[0].Text
}
