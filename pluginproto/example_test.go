package pluginproto_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/pluginproto/plugintest"
)

// greet is the handler of the one tool of the example plugin.
func greet(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct {
		Name string `json:"name"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	req.Log(pluginproto.LevelInfo, map[string]string{"greeting": args.Name})
	return pluginproto.TextResult("Hello, " + args.Name + "!"), nil
}

// A one-tool plugin. Its main would end with pluginproto.Serve(p); here the
// tool is called in-process with plugintest.CallTool, the way a tool author's
// test does, and the tool definition the host receives is printed.
func Example() {
	p := pluginproto.New("greeter", "1.0.0")
	p.AddTool(pluginproto.Tool{
		Name:        "greet",
		Description: "Greets someone by name.",
		InputSchema: json.RawMessage(`{"type":"object",
			"properties":{"name":{"type":"string"}},"required":["name"]}`),
		Annotations: &pluginproto.Annotations{ReadOnlyHint: new(true)},
	}, greet)
	// func main() { ...; pluginproto.Serve(p) }

	fmt.Printf("%s\n", p.Tools()[0])

	result, err := plugintest.CallTool(context.Background(), p, &plugintest.CallRequest{
		Tool:      "greet",
		Arguments: json.RawMessage(`{"name":"Ada"}`),
		Log: func(level, logger string, data json.RawMessage) {
			fmt.Printf("log %s %s\n", level, data)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n", result)
	// Output:
	// {"name":"greet","description":"Greets someone by name.","inputSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]},"annotations":{"readOnlyHint":true}}
	// log info {"greeting":"Ada"}
	// {"content":[{"type":"text","text":"Hello, Ada!"}]}
}
