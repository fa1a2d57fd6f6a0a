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

	// A second provider with the same tool name gets its prefix; the
	// first keeps the name its clients call.
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
	_, err = cat.CallTool(ctx, &tool.Call{Name: "hello", Arguments: json.RawMessage(`{}`)})
	_, rpcErr := tool.Outcome(err)
	fmt.Println(rpcErr.Code, rpcErr.Message)
	// Output:
	// {"name":"greet","description":"Greets someone.","inputSchema":{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}}
	// fr__greet → fr greet
	// greet → en greet
	// {"content":[{"type":"text","text":"fr says hello to Ada"}]}
	// {"content":[{"type":"text","text":"invalid arguments for tool \"fr__greet\": /who: missing required property"}],"isError":true}
	// -32602 invalid params: unknown tool: "hello"
}

// notes is a provider of resources: a tool.Server with no tools that
// answers every read with its own name.
type notes struct {
	name      string
	resources []string // URIs
	templates []string // URI templates
}

func (n notes) Name() string      { return n.name }
func (n notes) Tools() []tool.Def { return nil }
func (n notes) CallTool(context.Context, *tool.Call) (json.RawMessage, error) {
	return nil, tool.ErrUnknownTool
}
func (n notes) Offers() tool.Offers { return tool.Offers{Resources: true} }

func (n notes) Resources() []tool.Resource {
	var out []tool.Resource
	for _, uri := range n.resources {
		out = append(out, tool.Resource{URI: uri, JSON: json.RawMessage(fmt.Sprintf(`{"uri":%q,"name":"note"}`, uri))})
	}
	return out
}

func (n notes) Templates() []tool.Template {
	var out []tool.Template
	for _, t := range n.templates {
		out = append(out, tool.Template{URITemplate: t, JSON: json.RawMessage(fmt.Sprintf(`{"uriTemplate":%q,"name":"notes"}`, t))})
	}
	return out
}

func (n notes) ReadResource(_ context.Context, r *tool.Read) (json.RawMessage, error) {
	return json.RawMessage(fmt.Sprintf(`{"contents":[{"uri":%q,"text":%q}]}`, r.URI, n.name)), nil
}

func (notes) Prompts() []tool.Prompt { return nil }
func (notes) GetPrompt(context.Context, *tool.PromptGet) (json.RawMessage, error) {
	return nil, tool.ErrUnknownPrompt
}
func (notes) Complete(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
func (notes) SubscribeResource(context.Context, string, bool) error              { return nil }

// URIs are never renamed: of two providers offering one URI, the one whose
// name sorts first serves it. A URI no resource has goes to the first
// template that matches it, by provider name.
func Example_resources() {
	cat := catalog.New(&catalog.Options{Logger: hclog.NewNullLogger()})
	defer cat.Close()

	cat.Set(notes{name: "work", resources: []string{"notes://today"}, templates: []string{"notes://{day}"}})
	cat.Set(notes{name: "home", resources: []string{"notes://today", "notes://shopping"}, templates: []string{"notes://{+path}"}})
	for _, r := range cat.Resources() {
		fmt.Println(r.URI, "→", r.Provider)
	}
	for _, s := range cat.Skipped() {
		fmt.Println("hidden:", s.Provider, s.Name)
	}
	ctx := context.Background()
	for _, uri := range []string{"notes://today", "notes://monday", "notes://2025/05", "mail://inbox"} {
		res, err := cat.ReadResource(ctx, &tool.Read{URI: uri})
		fmt.Printf("%s: %s %v\n", uri, res, err)
	}
	// Output:
	// notes://shopping → home
	// notes://today → home
	// hidden: work notes://today
	// notes://today: {"contents":[{"uri":"notes://today","text":"home"}]} <nil>
	// notes://monday: {"contents":[{"uri":"notes://monday","text":"home"}]} <nil>
	// notes://2025/05: {"contents":[{"uri":"notes://2025/05","text":"home"}]} <nil>
	// mail://inbox:  unknown resource: "mail://inbox"
}
