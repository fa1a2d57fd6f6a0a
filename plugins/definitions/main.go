// Command definitions is a bundled plughost hook plugin: at
// on_definitions it scans every tool, prompt, resource and template
// definition other plugins list, before any client sees it, and hides
// those with signs of poisoning (instructions addressed to the model,
// credential-file demands, concealment, instructions about other tools,
// invisible characters, ANSI escapes, encoded payloads), naming what it
// found and where. The judging is package internal/poison; this file
// only wires it. See README.md.
package main

import (
	"fmt"
	"os"

	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/plugins/definitions/internal/poison"
)

// version is set at build time (-X main.version=...).
var version = "dev"

func main() {
	set, err := poison.SettingsFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "definitions:", err)
		os.Exit(1)
	}
	p := pluginproto.New("definitions", version)
	p.SetAbout(pluginproto.About{
		Title:       "Poisoned-definitions guardrail",
		Description: "Holds back tool, prompt and resource definitions that carry hidden instructions for the model.",
	})
	p.AddHook(poison.NewGuard(set).Hook, pluginproto.OnDefinitions)
	pluginproto.Serve(p)
}
