package pluginproto_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/pluginproto/plugintest"
)

// A resource the client can list and read. plugintest.ReadResource reads it
// in-process, as the host would.
func ExamplePlugin_AddResource() {
	p := pluginproto.New("notes", "1.0.0")
	p.AddResource(pluginproto.Resource{
		URI:         "notes://today",
		Name:        "today",
		Description: "Today's notes.",
		MIMEType:    "text/markdown",
	}, func(ctx context.Context, r *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
		return pluginproto.TextContents("", "# Today\n- ship resources"), nil
	})

	fmt.Printf("%s\n", p.Resources()[0])
	res, err := plugintest.ReadResource(context.Background(), p, &plugintest.ReadRequest{URI: "notes://today"})
	fmt.Printf("%s %v\n", res, err)
	_, err = plugintest.ReadResource(context.Background(), p, &plugintest.ReadRequest{URI: "notes://tomorrow"})
	fmt.Println(errors.Is(err, pluginproto.ErrUnknownResource))
	// Output:
	// {"uri":"notes://today","name":"today","description":"Today's notes.","mimeType":"text/markdown"}
	// {"contents":[{"uri":"notes://today","mimeType":"text/markdown","text":"# Today\n- ship resources"}]} <nil>
	// true
}

// A family of resources: a read of any URI the template matches goes to
// the handler, with the template's variables.
func ExamplePlugin_AddResourceTemplate() {
	avatars := map[string][]byte{"ada": {0x89, 'P', 'N', 'G'}}
	p := pluginproto.New("people", "1.0.0")
	p.AddResourceTemplate(pluginproto.ResourceTemplate{
		URITemplate: "people://{name}/avatar",
		Name:        "avatar",
		MIMEType:    "image/png",
	}, func(ctx context.Context, r *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
		png, ok := avatars[r.Vars["name"]]
		if !ok {
			return nil, fmt.Errorf("%w: nobody is called %q", pluginproto.ErrUnknownResource, r.Vars["name"])
		}
		return pluginproto.BlobContents("", png), nil
	})

	fmt.Printf("%s\n", p.ResourceTemplates()[0])
	res, _ := plugintest.ReadResource(context.Background(), p, &plugintest.ReadRequest{URI: "people://ada/avatar"})
	fmt.Printf("%s\n", res)
	_, err := plugintest.ReadResource(context.Background(), p, &plugintest.ReadRequest{URI: "people://bob/avatar"})
	fmt.Println(err)
	// Output:
	// {"uriTemplate":"people://{name}/avatar","name":"avatar","mimeType":"image/png"}
	// {"contents":[{"uri":"people://ada/avatar","mimeType":"image/png","blob":"iVBORw=="}]}
	// read resource "people://bob/avatar": unknown resource: nobody is called "bob"
}

// A prompt with arguments. The SDK checks them before the handler runs.
func ExamplePlugin_AddPrompt() {
	p := pluginproto.New("reviewer", "1.0.0")
	p.AddPrompt(pluginproto.Prompt{
		Name:        "review",
		Description: "Asks for a code review.",
		Arguments: []pluginproto.PromptArgument{
			{Name: "code", Required: true},
			{Name: "focus", Description: "What to look at first."},
		},
	}, func(ctx context.Context, g *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
		text := "Please review this code:\n" + g.Arguments["code"]
		if focus := g.Arguments["focus"]; focus != "" {
			text += "\nLook at " + focus + " first."
		}
		return &pluginproto.PromptResult{Messages: []pluginproto.Message{
			{Role: "user", Content: pluginproto.Text(text)},
		}}, nil
	})

	fmt.Printf("%s\n", p.Prompts()[0])
	res, _ := plugintest.GetPrompt(context.Background(), p, &plugintest.PromptRequest{
		Name: "review", Arguments: json.RawMessage(`{"code":"x := 1","focus":"naming"}`),
	})
	fmt.Printf("%s\n", res)
	_, err := plugintest.GetPrompt(context.Background(), p, &plugintest.PromptRequest{Name: "review"})
	fmt.Println(err)
	// Output:
	// {"name":"review","description":"Asks for a code review.","arguments":[{"name":"code","required":true},{"name":"focus","description":"What to look at first."}]}
	// {"messages":[{"role":"user","content":{"type":"text","text":"Please review this code:\nx := 1\nLook at naming first."}}]}
	// get prompt "review": invalid arguments: missing required argument "code"
}

// Completion of a prompt's argument as the user types it. The same field
// on a ResourceTemplate completes its variables.
func ExampleCompleteFunc() {
	languages := []string{"go", "python", "rust", "typescript"}
	p := pluginproto.New("reviewer", "1.0.0")
	p.AddPrompt(pluginproto.Prompt{
		Name:      "review",
		Arguments: []pluginproto.PromptArgument{{Name: "language"}},
		Complete: func(ctx context.Context, req *pluginproto.CompleteRequest) (*pluginproto.Completion, error) {
			var values []string
			for _, l := range languages {
				if strings.HasPrefix(l, req.Value) {
					values = append(values, l)
				}
			}
			return &pluginproto.Completion{Values: values}, nil
		},
	}, func(ctx context.Context, g *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
		return &pluginproto.PromptResult{}, nil
	})

	res, err := plugintest.Complete(context.Background(), p, json.RawMessage(`{
		"ref": {"type": "ref/prompt", "name": "review"},
		"argument": {"name": "language", "value": "py"}}`))
	fmt.Printf("%s %v\n", res, err)
	// Output:
	// {"completion":{"values":["python"]}} <nil>
}

// A tool that asks the user to confirm. The first round ends at Elicit
// with ErrInputRequired: the host asks the client and runs the handler
// again with the answer. plugintest.CallTool plays the host here, answering
// with AnswerInput.
func ExampleRequest_Elicit() {
	p := pluginproto.New("files", "1.0.0")
	p.AddTool(pluginproto.Tool{Name: "delete"}, func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		answer, err := req.Elicit(ctx, pluginproto.ElicitParams{
			Message: "Delete everything?",
			RequestedSchema: json.RawMessage(`{"type":"object",
				"properties":{"sure":{"type":"boolean"}},"required":["sure"]}`),
		})
		if errors.Is(err, pluginproto.ErrClientUnsupported) {
			return pluginproto.ErrorResult("this tool needs a client that can ask the user"), nil
		}
		if err != nil {
			return nil, err // ErrInputRequired: the answer comes in the next round
		}
		var form struct{ Sure bool }
		if answer.Action != "accept" || json.Unmarshal(answer.Content, &form) != nil || !form.Sure {
			return pluginproto.TextResult("kept everything"), nil
		}
		return pluginproto.TextResult("deleted everything"), nil
	})

	// A client that declared elicitation, and whose user agrees.
	res, err := plugintest.CallTool(context.Background(), p, &plugintest.CallRequest{
		Tool:               "delete",
		ClientCapabilities: json.RawMessage(`{"elicitation":{}}`),
		AnswerInput: func(method string, params json.RawMessage) (json.RawMessage, error) {
			fmt.Printf("asked %s %s\n", method, params)
			return json.RawMessage(`{"action":"accept","content":{"sure":true}}`), nil
		},
	})
	fmt.Printf("%s %v\n", res, err)

	// A client that declared nothing: the tool knows at once.
	res, _ = plugintest.CallTool(context.Background(), p, &plugintest.CallRequest{Tool: "delete"})
	fmt.Printf("%s\n", res)
	// Output:
	// asked elicitation/create {"message":"Delete everything?","requestedSchema":{"type":"object","properties":{"sure":{"type":"boolean"}},"required":["sure"]}}
	// {"content":[{"type":"text","text":"deleted everything"}]} <nil>
	// {"content":[{"type":"text","text":"this tool needs a client that can ask the user"}],"isError":true}
}

// A tool that asks the client's LLM. Without AnswerInput, plugintest.CallTool
// returns the *InputRequiredError a host would get: the requests, and the
// state to send back with the answers.
func ExampleRequest_Sample() {
	p := pluginproto.New("writer", "1.0.0")
	p.AddTool(pluginproto.Tool{Name: "haiku"}, func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		res, err := req.Sample(ctx, pluginproto.SampleParams{
			Messages:  []pluginproto.Message{{Role: "user", Content: pluginproto.Text("A haiku about gophers.")}},
			MaxTokens: 100,
		})
		if err != nil {
			return nil, err
		}
		return pluginproto.TextResult(res.Text()), nil
	})

	req := &plugintest.CallRequest{Tool: "haiku", ClientCapabilities: json.RawMessage(`{"sampling":{}}`)}
	_, err := plugintest.CallTool(context.Background(), p, req)
	var ir *pluginproto.InputRequiredError
	if errors.As(err, &ir) {
		fmt.Printf("requests %s, state %q\n", ir.Requests, ir.State)
	}

	// The retry, with the client's answer to request "1".
	req.Input = &plugintest.Input{
		Responses: json.RawMessage(`{"1":{"role":"assistant","model":"m",
			"content":{"type":"text","text":"Small furry coders"}}}`),
		State: ir.State,
	}
	res, err := plugintest.CallTool(context.Background(), p, req)
	fmt.Printf("%s %v\n", res, err)
	// Output:
	// requests {"1":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"A haiku about gophers."}}],"maxTokens":100}}}, state ""
	// {"content":[{"type":"text","text":"Small furry coders"}]} <nil>
}
