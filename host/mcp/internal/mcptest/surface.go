package mcptest

import (
	"context"
	"encoding/json"
	"fmt"

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
