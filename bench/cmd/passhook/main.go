// Command passhook is the hooks section's guardrail: a hook plugin that
// passes every question at every point at once, so that what the section
// measures is the hop to a hook and back (the host's chain, the Hooks
// stream, the plugin's dispatch), not a guardrail's own work.
package main

import (
	"context"

	"github.com/plughost/plughost/pluginproto"
)

func main() {
	p := pluginproto.New("passhook", "1.0.0")
	p.AddHook(func(context.Context, *pluginproto.HookRequest) (pluginproto.HookAnswer, error) {
		return pluginproto.Pass(), nil
	}, pluginproto.BeforeCall, pluginproto.AfterCall, pluginproto.BeforeRead, pluginproto.AfterRead,
		pluginproto.BeforeGet, pluginproto.AfterGet, pluginproto.OnDefinitions)
	pluginproto.Serve(p)
}
