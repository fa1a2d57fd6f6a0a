package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/grants"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

const corpus = `{"id":"Ant Design Components::list_components","server":"Ant Design Components","name":"list_components","description":"Lists the components.","inputSchema":{"type":"object"},"server_title":"Ant Design","server_description":"React UI components.","category":"dev"}
{"id":"time::now","server":"time","name":"now","description":"The time.","inputSchema":{"type":"object","properties":{"tz":{"type":"string"}}},"server_title":"Time","server_description":"Clocks.","category":"util"}
`

// The plugin named after a server serves that server's tools, title and
// description, and answers calls naming the tool and echoing arguments.
func TestNewPlugin(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tools.jsonl")
	if err := os.WriteFile(path, []byte(corpus), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &grants.Grants{Plugin: "Ant_Design_Components", AllowRead: []string{"/usr/lib", path}}
	p, err := newPlugin(g, "/ignored")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pluginproto.About{Title: "Ant Design", Description: "React UI components."}, p.About()); diff != "" {
		t.Errorf("About (-want +got):\n%s", diff)
	}
	if got := p.Tools(); len(got) != 1 || !strings.Contains(string(got[0]), `"name":"list_components"`) {
		t.Errorf("Tools = %s, want list_components alone", got)
	}

	// Without the grants (a run by hand), the file name names the server.
	p, err = newPlugin(&grants.Grants{AllowRead: []string{path}}, "/plugins/time")
	if err != nil {
		t.Fatal(err)
	}
	res, err := server{"time"}.CallTool(t.Context(), &pluginhost.ProxyCall{Tool: "now", Arguments: json.RawMessage(`{"tz":"UTC"}`)})
	if err != nil || !strings.Contains(string(res), `time::now called with {\"tz\":\"UTC\"}`) {
		t.Errorf("CallTool = %s, %v", res, err)
	}
	if p.About().Title != "Time" {
		t.Errorf("the plugin file time serves %q, want Time", p.About().Title)
	}

	for name, g := range map[string]*grants.Grants{
		"no .jsonl granted": {Plugin: "time"},
		"unknown server":    {Plugin: "nope", AllowRead: []string{path}},
	} {
		if _, err := newPlugin(g, ""); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
