package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/plughost/plughost/pluginproto"
)

// The resources, the resource template, the prompts and the completion the
// suite's resources-*, prompts-* and completion-complete scenarios ask
// for, with the contents they describe.

const (
	staticText     = "This is the content of the static text resource."
	watchedText    = "This is the content of the watched resource."
	promptText     = "This is a simple prompt for testing."
	embeddedPrompt = "Embedded resource content for testing."
)

// addResources adds the fixture resources and the template.
func addResources(p *pluginproto.Plugin) {
	p.AddResource(pluginproto.Resource{
		URI: "test://static-text", Name: "static-text", Title: "Static text",
		Description: "A text resource whose contents never change.", MIMEType: "text/plain",
	}, constantContents(pluginproto.TextContents("text/plain", staticText)))
	p.AddResource(pluginproto.Resource{
		URI: "test://static-binary", Name: "static-binary", Title: "Static binary",
		Description: "A binary resource: a 1x1 red PNG.", MIMEType: "image/png",
	}, constantContents(pluginproto.BlobContents("image/png", redPixelPNG)))
	p.AddResource(pluginproto.Resource{
		URI: "test://watched-resource", Name: "watched-resource", Title: "Watched resource",
		Description: "A text resource clients subscribe to.", MIMEType: "text/plain",
	}, constantContents(pluginproto.TextContents("text/plain", watchedText)))
	p.AddResourceTemplate(pluginproto.ResourceTemplate{
		URITemplate: "test://template/{id}/data", Name: "template-data", Title: "Data by id",
		Description: "JSON data for any id.", MIMEType: "application/json",
		Complete: completeFrom(map[string][]string{"id": {"1", "123", "42"}}),
	}, templateData)
}

func constantContents(r *pluginproto.ResourceResult) pluginproto.ResourceHandler {
	return func(context.Context, *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) { return r, nil }
}

func templateData(_ context.Context, r *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
	id := r.Vars["id"]
	return pluginproto.TextContents("application/json",
		fmt.Sprintf(`{"id":%q,"templateTest":true,"data":"Data for ID: %s"}`, id, id)), nil
}

// addPrompts adds the fixture prompts.
func addPrompts(p *pluginproto.Plugin) {
	p.AddPrompt(pluginproto.Prompt{Name: "test_simple_prompt", Description: "A prompt without arguments."},
		func(context.Context, *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
			return &pluginproto.PromptResult{Messages: []pluginproto.Message{
				{Role: "user", Content: pluginproto.Text(promptText)},
			}}, nil
		})
	p.AddPrompt(pluginproto.Prompt{
		Name: "test_prompt_with_arguments", Description: "A prompt with two required arguments.",
		Arguments: []pluginproto.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		},
		Complete: completeFrom(map[string][]string{
			"arg1": {"paris", "park", "party", "pasta"},
			"arg2": {"world", "word", "work"},
		}),
	}, func(_ context.Context, g *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
		return &pluginproto.PromptResult{Messages: []pluginproto.Message{{Role: "user", Content: pluginproto.Text(
			fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", g.Arguments["arg1"], g.Arguments["arg2"]))}}}, nil
	})
	p.AddPrompt(pluginproto.Prompt{
		Name: "test_prompt_with_embedded_resource", Description: "A prompt that embeds the resource it is given.",
		Arguments: []pluginproto.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
	}, func(_ context.Context, g *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
		return &pluginproto.PromptResult{Messages: []pluginproto.Message{
			{Role: "user", Content: pluginproto.EmbeddedText(g.Arguments["resourceUri"], "text/plain", embeddedPrompt)},
			{Role: "user", Content: pluginproto.Text("Please process the embedded resource above.")},
		}}, nil
	})
	p.AddPrompt(pluginproto.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image: a 1x1 red PNG."},
		func(context.Context, *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
			return &pluginproto.PromptResult{Messages: []pluginproto.Message{
				{Role: "user", Content: pluginproto.Image(redPixelPNG, "image/png")},
				{Role: "user", Content: pluginproto.Text("Please analyze the image above.")},
			}}, nil
		})
}

// completeFrom completes each argument from its list: the values that
// start with what the user typed, in the list's order.
func completeFrom(values map[string][]string) pluginproto.CompleteFunc {
	return func(_ context.Context, req *pluginproto.CompleteRequest) (*pluginproto.Completion, error) {
		var out []string
		for _, v := range values[req.Argument] {
			if strings.HasPrefix(v, req.Value) {
				out = append(out, v)
			}
		}
		return &pluginproto.Completion{Values: slices.Clip(out), Total: len(out)}, nil
	}
}
