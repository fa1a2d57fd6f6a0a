package main

import (
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/serve"
)

// The human form of `plughost plugins`: rows aligned across the whole
// table, multi-line errors and reasons indented under their row, a failed
// plugin's stderr shown as lines rather than quoted in its error.
func TestReportPrint(t *testing.T) {
	t.Parallel()
	stderr := "Error: boom\n    at main (/srv/plugin.js:1:7)"
	r := &serve.Report{Plugins: []serve.PluginReport{
		{Name: "alpha", State: "running", Version: "alpha 1", Sandbox: []string{"landlock"},
			Tools: []serve.OfferReport{{Name: "greet", ExposedName: "greet", Description: "Greets.\nMore lines."}},
			Refused: []serve.RefusalReport{
				{Kind: "tool", Name: "bad", Reason: "inputSchema does not compile:\n- at '/n': want number"},
				{Kind: "prompt", Reason: "definition 2 of the list has no \"name\" string: {}"},
			}},
		{Name: "a-long-plugin-name", State: "failed",
			Error: "start: Unrecognized remote plugin message: \nFailed to read any lines", Stderr: stderr},
		{Name: "memory", State: "running", Version: "0.6.0", Sandbox: []string{"landlock"},
			Declared: "npx -y @modelcontextprotocol/server-memory",
			Package: &serve.PackageReport{Manager: "npm", Name: "@modelcontextprotocol/server-memory", Version: "2026.8.31",
				InstalledAt: time.Date(2026, 11, 27, 12, 0, 0, 0, time.Local), Summary: "@modelcontextprotocol/server-memory@2026.8.31"},
			Tools: []serve.OfferReport{{Name: "read_graph", ExposedName: "read_graph"}}},
	}}
	var b strings.Builder
	if err := printReport(&b, r); err != nil {
		t.Fatal(err)
	}
	want := `alpha               running  version alpha 1  sandbox landlock
  greet             Greets.
  REFUSED tool "bad": inputSchema does not compile:
      - at '/n': want number
  REFUSED prompt without a name: definition 2 of the list has no "name" string: {}
a-long-plugin-name  failed   start: Unrecognized remote plugin message:
      Failed to read any lines
    stderr of a-long-plugin-name:
      Error: boom
          at main (/srv/plugin.js:1:7)
memory              running  version 0.6.0    sandbox landlock
  (declared server: npx -y @modelcontextprotocol/server-memory)
  package: @modelcontextprotocol/server-memory@2026.8.31 (installed 2026-11-27)
  read_graph
`
	if got := b.String(); got != want {
		t.Errorf("printed:\n%s\nwant:\n%s", got, want)
	}
}
