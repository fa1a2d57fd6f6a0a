package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
)

// TestWarnUnknownPlugins: a plugin block naming no plugin of the directory
// is warned about (a typo would silently leave the plugin it meant under
// the defaults); one naming a plugin there is not.
func TestWarnUnknownPlugins(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte("sandbox {\n  plugin \"notes\" {}\n  plugin \"note\" {}\n}\nplugins {\n  plugin \"nots\" {}\n}\n"), "c.hcl")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	warnUnknownPlugins(cfg, map[string]bool{"notes": true}, "/plugins", hclog.New(&hclog.LoggerOptions{Output: &out}))
	got := out.String()
	for _, want := range []string{`block="sandbox { plugin \"note\" }"`, `block="plugins { plugin \"nots\" }"`} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks a warning for %s", got, want)
		}
	}
	if strings.Contains(got, `plugin \"notes\"`) {
		t.Errorf("log %q warns about a block whose plugin is there", got)
	}
}
