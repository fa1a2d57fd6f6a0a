package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/plughost/plughost/host/tool"
)

// NoSurface is the part of a catalog beyond tools, offering nothing: empty
// lists, unknown resources and prompts. Fakes embed it.
type NoSurface struct{}

func (NoSurface) ListResources(string) ([]json.RawMessage, string, error) { return nil, "", nil }
func (NoSurface) ListResourceTemplates(string) ([]json.RawMessage, string, error) {
	return nil, "", nil
}
func (NoSurface) ListPrompts(string) ([]json.RawMessage, string, error) { return nil, "", nil }

func (NoSurface) ReadResource(_ context.Context, r *tool.Read) (json.RawMessage, error) {
	return nil, fmt.Errorf("%w: %s", tool.ErrUnknownResource, r.URI)
}

func (NoSurface) GetPrompt(_ context.Context, g *tool.PromptGet) (json.RawMessage, error) {
	return nil, fmt.Errorf("%w: %q", tool.ErrUnknownPrompt, g.Name)
}

func (NoSurface) Complete(context.Context, json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("%w: nothing to complete", tool.ErrUnknownPrompt)
}

func (NoSurface) SubscribeResource(_ context.Context, uri string) (func(), error) {
	return nil, fmt.Errorf("%w: %s", tool.ErrUnknownResource, uri)
}

func (NoSurface) OnResourceUpdated(func(string)) func() { return func() {} }

// The fake Catalog's surface beyond tools; every list pages by 3 like its
// tools:
//
//	resources  ResourceURIs, each read as its text "contents of URI";
//	           subscribable (SubscribeResource counts live subscriptions,
//	           released ones gone: Subscriptions)
//	templates  file:///{name}
//	prompts    PromptNames: greet (needs argument name: ErrBadArguments
//	           otherwise), plain, recap (fails), terse, and, unlisted,
//	           every input script by name
//	completion ref/prompt greet's argument name (Alice, Alicia, Bob) and
//	           ref/resource file:///{name}'s argument name (the files),
//	           by prefix; ref/prompt "fail" fails
//
// ReadResource also reads input://<script> (an input script: its text, or
// an error when it fails), fail://… (fails) and garbage://… (not JSON);
// SubscribeResource refuses fail://… and, as the catalog refuses one over
// its limit (tool.ErrRefused naming it), full://… ; anything else is
// unknown.
var (
	ResourceURIs = []string{"file:///a.txt", "file:///b.txt", "file:///c.txt", "file:///d.txt"}
	PromptNames  = []string{"greet", "plain", "recap", "terse"}
)

func (c *Catalog) ListResources(cursor string) ([]json.RawMessage, string, error) {
	return c.page(cursor, ResourceURIs, func(uri string) string {
		return `{"uri":"` + uri + `","name":"` + strings.TrimPrefix(uri, "file:///") + `","mimeType":"text/plain"}`
	})
}

func (c *Catalog) ListResourceTemplates(cursor string) ([]json.RawMessage, string, error) {
	return c.page(cursor, []string{"file:///{name}"}, func(t string) string {
		return `{"uriTemplate":"` + t + `","name":"files"}`
	})
}

func (c *Catalog) ListPrompts(cursor string) ([]json.RawMessage, string, error) {
	return c.page(cursor, PromptNames, func(name string) string {
		if name == "greet" {
			return `{"name":"greet","arguments":[{"name":"name","required":true}]}`
		}
		return `{"name":"` + name + `"}`
	})
}

func readResult(uri, text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"contents": []map[string]string{{"uri": uri, "mimeType": "text/plain", "text": text}}})
	return b
}

func (c *Catalog) ReadResource(ctx context.Context, r *tool.Read) (json.RawMessage, error) {
	switch {
	case slices.Contains(ResourceURIs, r.URI):
		return readResult(r.URI, "contents of "+r.URI), nil
	case strings.HasPrefix(r.URI, "input://"):
		name := strings.TrimPrefix(r.URI, "input://")
		if _, ok := scripts[name]; ok {
			text, failed, err := c.script(ctx, name, r.Input)
			switch {
			case err != nil:
				return nil, err
			case failed:
				return nil, errors.New(text)
			}
			return readResult(r.URI, text), nil
		}
	case strings.HasPrefix(r.URI, "fail://"):
		return nil, errors.New("the disk is on fire")
	case strings.HasPrefix(r.URI, "garbage://"):
		return json.RawMessage("{oops"), nil
	case r.URI == "caps://":
		return readResult(r.URI, string(r.ClientCapabilities)), nil
	}
	return nil, fmt.Errorf("%w: %s", tool.ErrUnknownResource, r.URI)
}

func promptResult(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]string{"type": "text", "text": text}}}})
	return b
}

func (c *Catalog) GetPrompt(ctx context.Context, g *tool.PromptGet) (json.RawMessage, error) {
	switch g.Name {
	case "greet":
		var args struct{ Name string }
		if json.Unmarshal(g.Arguments, &args) != nil || args.Name == "" {
			return nil, tool.Errorf(tool.ErrBadArguments, "prompt %q needs argument name", g.Name)
		}
		return promptResult("Hello, " + args.Name + "!"), nil
	case "plain":
		return promptResult("Say something plain."), nil
	case "terse":
		return promptResult("Be terse."), nil
	case "recap":
		return nil, errors.New("the recap backend exploded")
	}
	if _, ok := scripts[g.Name]; ok {
		text, failed, err := c.script(ctx, g.Name, g.Input)
		switch {
		case err != nil:
			return nil, err
		case failed:
			return nil, errors.New(text)
		}
		return promptResult(text), nil
	}
	return nil, fmt.Errorf("%w: %q", tool.ErrUnknownPrompt, g.Name)
}

func (c *Catalog) Complete(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		Ref struct {
			Type, Name, URI string
		}
		Argument struct{ Name, Value string }
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	var values []string
	switch {
	case p.Ref.Type == "ref/prompt" && p.Ref.Name == "greet":
		values = []string{"Alice", "Alicia", "Bob"}
	case p.Ref.Type == "ref/prompt" && p.Ref.Name == "fail":
		return nil, errors.New("the completion backend exploded")
	case p.Ref.Type == "ref/prompt":
		return nil, fmt.Errorf("%w: %q", tool.ErrUnknownPrompt, p.Ref.Name)
	case p.Ref.URI == "file:///{name}":
		for _, u := range ResourceURIs {
			values = append(values, strings.TrimPrefix(u, "file:///"))
		}
	default:
		return nil, fmt.Errorf("%w: no resource template %s", tool.ErrUnknownResource, p.Ref.URI)
	}
	if p.Argument.Name != "name" {
		return nil, tool.Errorf(tool.ErrBadArguments, "%s has no argument %q", p.Ref.Type, p.Argument.Name)
	}
	match := []string{}
	for _, v := range values {
		if strings.HasPrefix(v, p.Argument.Value) {
			match = append(match, v)
		}
	}
	b, _ := json.Marshal(map[string]any{"completion": map[string]any{"values": match, "total": len(match), "hasMore": false}})
	return b, nil
}

func (c *Catalog) SubscribeResource(_ context.Context, uri string) (func(), error) {
	switch {
	case strings.HasPrefix(uri, "fail://"):
		return nil, errors.New("the provider refused the subscription")
	case strings.HasPrefix(uri, "full://"):
		return nil, tool.Errorf(tool.ErrRefused, "cannot subscribe to resource %q: 10000 resources are subscribed, the most this server allows at once", uri)
	case !slices.Contains(ResourceURIs, uri):
		return nil, fmt.Errorf("%w: %s", tool.ErrUnknownResource, uri)
	}
	c.mu.Lock()
	c.live[uri]++
	c.mu.Unlock()
	c.poke()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if c.live[uri]--; c.live[uri] == 0 {
				delete(c.live, uri)
			}
			c.mu.Unlock()
			c.poke()
		})
	}, nil
}

// Subscriptions counts the live subscriptions (not released), of every URI.
func (c *Catalog) Subscriptions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, k := range c.live {
		n += k
	}
	return n
}

func (c *Catalog) OnResourceUpdated(fn func(string)) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.watchers[id] = fn
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.watchers, id)
	}
}

// Update tells every watcher that the resource at uri changed.
func (c *Catalog) Update(uri string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, fn := range c.watchers {
		fn(uri)
	}
}

func (c *Catalog) poke() {
	if c.OnChange != nil {
		c.OnChange()
	}
}
