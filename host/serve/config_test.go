package serve

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/streamable"
)

// TestWarnUnknownPlugins: a plugin block naming no plugin of the directory
// is warned about (a typo would silently leave the plugin it meant under
// the defaults); one naming a plugin there is not.
func TestWarnUnknownPlugins(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte("sandbox {\n  plugin \"notes\" {}\n  plugin \"note\" {}\n}\nplugins {\n  plugin \"nots\" {}\n}\n"+
		"trust {\n  plugin \"notez\" {\n    mode = \"pinned\"\n  }\n}\n"), "c.hcl")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	warnUnknownPlugins(cfg, map[string]bool{"notes": true}, "/plugins", hclog.New(&hclog.LoggerOptions{Output: &out}))
	got := out.String()
	for _, want := range []string{`block="sandbox { plugin \"note\" }"`, `block="plugins { plugin \"nots\" }"`, `block="trust { plugin \"notez\" }"`} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks a warning for %s", got, want)
		}
	}
	if strings.Contains(got, `plugin \"notes\"`) {
		t.Errorf("log %q warns about a block whose plugin is there", got)
	}
}

// TestSearchPathReserved: the search block refuses every path the HTTP
// listener serves by itself (config keeps its own list of them), and the
// listener takes any path the block accepts.
func TestSearchPathReserved(t *testing.T) {
	t.Parallel()
	for _, p := range []string{streamable.PathMCP, streamable.PathSSE, streamable.PathMessage, streamable.PathMetrics, streamable.PathHealthz, streamable.PathReadyz} {
		if _, err := config.Parse([]byte("search {\n  path = \""+p+"\"\n}\n"), "c.hcl"); err == nil || !strings.Contains(err.Error(), "is served already") {
			t.Errorf("search { path = %q }: %v, want it refused as served already", p, err)
		}
	}
	cfg, err := config.Parse([]byte("search {\n  path = \"/mcp/search\"\n}\n"), "c.hcl")
	if err != nil {
		t.Fatal(err)
	}
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
	if err := (&streamable.Options{Endpoints: map[string]*mcp.Server{cfg.Search.Path: nil}}).Check(loopback); err != nil {
		t.Errorf("an endpoint at %s: %v", cfg.Search.Path, err)
	}
}
