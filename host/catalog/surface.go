package catalog

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/plughost/plughost/host/tool"
)

// Resources, templates, prompts and completion: not aggregated yet.

func (c *Catalog) ListResources(string) ([]json.RawMessage, string, error) { return nil, "", nil }
func (c *Catalog) ListResourceTemplates(string) ([]json.RawMessage, string, error) {
	return nil, "", nil
}
func (c *Catalog) ListPrompts(string) ([]json.RawMessage, string, error) { return nil, "", nil }

func (c *Catalog) ReadResource(_ context.Context, r *tool.Read) (json.RawMessage, error) {
	return nil, fmt.Errorf("%w: %s", tool.ErrUnknownResource, r.URI)
}

func (c *Catalog) GetPrompt(_ context.Context, g *tool.PromptGet) (json.RawMessage, error) {
	return nil, fmt.Errorf("%w: %q", tool.ErrUnknownPrompt, g.Name)
}

func (c *Catalog) Complete(context.Context, json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("%w: nothing to complete", tool.ErrUnknownPrompt)
}

func (c *Catalog) SubscribeResource(_ context.Context, uri string) (func(), error) {
	return nil, fmt.Errorf("%w: %s", tool.ErrUnknownResource, uri)
}

func (c *Catalog) OnResourceUpdated(func(string)) func() { return func() {} }
