// Command secrets is a bundled plughost hook plugin: it finds credentials
// (gitleaks' rule set, pinned and embedded) in calls' and prompt gets'
// arguments, in reads' URIs and in results, and refuses the request or
// redacts the credential, as its settings say. The judging is package
// internal/secrets; this file only wires it. See README.md.
package main

import (
	"fmt"
	"os"

	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/plugins/secrets/internal/gitleaks"
	"github.com/plughost/plughost/plugins/secrets/internal/secrets"
)

// version is set at build time (-X main.version=...).
var version = "dev"

func main() {
	set, err := secrets.SettingsFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "secrets:", err)
		os.Exit(1)
	}
	rules, err := secrets.Default(set.Disabled...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "secrets:", err)
		os.Exit(1)
	}
	p := pluginproto.New("secrets", version)
	p.SetAbout(pluginproto.About{
		Title:       "Secrets guardrail",
		Description: "Refuses or redacts credentials in tool calls' arguments and results (gitleaks " + gitleaks.Version + " rules).",
	})
	p.AddHook(secrets.NewGuard(rules, set).Hook, secrets.Points...)
	pluginproto.Serve(p)
}
