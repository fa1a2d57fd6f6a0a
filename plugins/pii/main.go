// Command pii is a bundled plughost hook plugin: it finds personal data
// (e-mail addresses, phone numbers, Luhn-checked card numbers,
// mod-97-checked IBANs) in tool, resource and prompt results and redacts
// it, or refuses the result, as its settings say. The judging is package
// internal/pii; this file only wires it. See README.md.
package main

import (
	"fmt"
	"os"

	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/plugins/pii/internal/pii"
)

// version is set at build time (-X main.version=...).
var version = "dev"

func main() {
	set, err := pii.SettingsFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pii:", err)
		os.Exit(1)
	}
	p := pluginproto.New("pii", version)
	p.SetAbout(pluginproto.About{
		Title:       "Personal-data guardrail",
		Description: "Redacts e-mail addresses, phone numbers, card numbers and IBANs in tool, resource and prompt results.",
	})
	p.AddHook(pii.NewGuard(set).Hook, pii.Points...)
	pluginproto.Serve(p)
}
