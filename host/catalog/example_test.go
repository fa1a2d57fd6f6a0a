package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/tool"
)

// greeter is a provider with one tool.
type greeter struct{ name string }

func (g greeter) Name() string { return g.name }

func (g greeter) Tools() []tool.Def {
	return []tool.Def{{Name: "greet", JSON: json.RawMessage(`{
		"name": "greet",
		"description": "Greets someone.",
		"inputSchema": {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}
	}`)}}
}

func (g greeter) CallTool(_ context.Context, c *tool.Call) (json.RawMessage, error) {
	var args struct{ Who string }
	if err := json.Unmarshal(c.Arguments, &args); err != nil {
		return nil, err
	}
	return tool.TextResult(g.name + " says hello to " + args.Who), nil
}

func Example() {
	cat := catalog.New(&catalog.Options{Logger: hclog.NewNullLogger()})
	defer cat.Close()

	cat.Set(greeter{"en"})
	page, _, _ := cat.ListTools("")
	fmt.Printf("%s\n", page[0])

	// A second provider with the same tool name: both get a prefix.
	cat.Set(greeter{"fr"})
	for _, e := range cat.Exposed() {
		fmt.Println(e.ExposedName, "→", e.Provider, e.Tool)
	}

	ctx := context.Background()
	res, _ := cat.CallTool(ctx, &tool.Call{Name: "fr__greet", Arguments: json.RawMessage(`{"who":"Ada"}`)})
	fmt.Printf("%s\n", res)
	// A failed call is an error; tool.Outcome says what the client gets.
	_, err := cat.CallTool(ctx, &tool.Call{Name: "fr__greet"}) // no arguments: {}
	res, _ = tool.Outcome(err)
	fmt.Printf("%s\n", res)
	_, err = cat.CallTool(ctx, &tool.Call{Name: "greet", Arguments: json.RawMessage(`{}`)})
	_, rpcErr := tool.Outcome(err)
	fmt.Println(rpcErr.Code, rpcErr.Message)
	// Output:
	// {"name":"greet","description":"Greets someone.","inputSchema":{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}}
	// en__greet → en greet
	// fr__greet → fr greet
	// {"content":[{"type":"text","text":"fr says hello to Ada"}]}
	// {"content":[{"type":"text","text":"invalid arguments for tool \"fr__greet\": /who: missing required property"}],"isError":true}
	// -32602 invalid params: unknown tool: "greet"
}
