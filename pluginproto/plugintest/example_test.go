package plugintest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/pluginproto/plugintest"
)

// repeatPlugin is a plugin with one tool, repeat, whose handler has a bug:
// for n = 0 it returns text without the structured content its
// outputSchema promises.
func repeatPlugin() *pluginproto.Plugin {
	p := pluginproto.New("words", "1.0.0")
	p.AddTool(pluginproto.Tool{
		Name:        "repeat",
		Description: "Repeats a word n times.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"word":{"type":"string"},"n":{"type":"integer","minimum":0,"maximum":10}},"required":["word","n"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{
			"text":{"type":"string"},"length":{"type":"integer"}},"required":["text","length"]}`),
	}, func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		var args struct {
			Word string `json:"word"`
			N    int    `json:"n"`
		}
		if err := req.Bind(&args); err != nil {
			return nil, err
		}
		if args.N == 0 {
			return pluginproto.TextResult("nothing to repeat"), nil // the bug
		}
		text := strings.Repeat(args.Word, args.N)
		return &pluginproto.Result{
			Content: []pluginproto.Content{pluginproto.Text(text)},
			StructuredContent: struct {
				Text   string `json:"text"`
				Length int    `json:"length"`
			}{text, len(text)},
		}, nil
	})
	return p
}

// An author's test calls the plugin's tools through plugintest, which
// applies the host's checks around the handler: the call with n = -5 never
// reaches it (the host refuses it: inputSchema's minimum), and the result
// for n = 0 is refused (it lacks the structuredContent its outputSchema
// requires), where the plugin's own in-process call would have let both pass.
func Example() {
	p := repeatPlugin()
	ctx := context.Background()
	for _, args := range []string{`{"word":"ab","n":2}`, `{"word":"ab","n":-5}`, `{"word":"ab","n":0}`} {
		res, err := plugintest.CallTool(ctx, p, &plugintest.CallRequest{Tool: "repeat", Arguments: json.RawMessage(args)})
		switch {
		case errors.Is(err, plugintest.ErrBadArguments):
			fmt.Println("the host refuses the call:", err)
		case errors.Is(err, plugintest.ErrBadResult):
			fmt.Println("the host refuses the result:", err)
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Printf("%s\n", res)
		}
	}
	// Output:
	// {"content":[{"type":"text","text":"abab"}],"structuredContent":{"text":"abab","length":4}}
	// the host refuses the call: invalid arguments for tool "repeat": /n: minimum: got -5, want 0
	// the host refuses the result: tool "repeat" returned no structuredContent, but its outputSchema requires structured results
}

// CheckTools finds the tools the host would not list. The SDK's AddTool
// accepts any schema object of type "object"; the host also compiles it,
// and refuses one that breaks JSON Schema or refers to another document.
func ExampleCheckTools() {
	p := pluginproto.New("words", "1.0.0")
	noop := func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		return pluginproto.TextResult("ok"), nil
	}
	p.AddTool(pluginproto.Tool{Name: "fine", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	p.AddTool(pluginproto.Tool{Name: "quoted", InputSchema: json.RawMessage(`{"type":"object",
		"properties":{"n":{"type":"integer","minimum":"0"}}}`)}, noop)
	p.AddTool(pluginproto.Tool{Name: "remote", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","$ref":"https://example.com/out.json"}`)}, noop)

	err := plugintest.CheckTools(p)
	fmt.Println(errors.Is(err, plugintest.ErrToolRefused))
	fmt.Println(err)
	// Output:
	// true
	// tool "quoted": the host would not list it: inputSchema does not compile: breaks the rules of JSON Schema: /properties/n/minimum: must be number, got string
	// tool "remote": the host would not list it: outputSchema does not compile: references to other documents are not allowed (https://example.com/out.json)
}
