package main

import (
	"strings"
	"testing"
)

// The human form of `plughost plugins`: rows aligned across the whole
// table, multi-line errors and reasons indented under their row, a failed
// plugin's stderr shown as lines rather than quoted in its error.
func TestReportPrint(t *testing.T) {
	t.Parallel()
	stderr := "Error: boom\n    at main (/srv/plugin.js:1:7)"
	r := &report{Plugins: []pluginReport{
		{Name: "alpha", State: "running", Version: "alpha 1", Sandbox: []string{"landlock"},
			Tools: []offerReport{{Name: "greet", ExposedName: "greet", Description: "Greets.\nMore lines."}},
			Refused: []refusalReport{
				{Kind: "tool", Name: "bad", Reason: "inputSchema does not compile:\n- at '/n': want number"},
				{Kind: "prompt", Reason: "definition 2 of the list has no \"name\" string: {}"},
			}},
		{Name: "a-long-plugin-name", State: "failed",
			Error: "start: Unrecognized remote plugin message: \nFailed to read any lines", Stderr: stderr},
	}}
	var b strings.Builder
	if err := r.print(&b); err != nil {
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
`
	if got := b.String(); got != want {
		t.Errorf("printed:\n%s\nwant:\n%s", got, want)
	}
}
