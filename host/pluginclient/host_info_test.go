package pluginclient

import (
	"testing"

	"github.com/plughost/plughost/pluginproto"
)

// TestPluginLearnsTheHost: after Describe, the plugin's Plugin.Host names
// the host's version and the contract version negotiated with it; before,
// it says it does not know.
func TestPluginLearnsTheHost(t *testing.T) {
	t.Parallel()
	p := pluginproto.New("test", "0")
	if h, ok := p.Host(); ok {
		t.Fatalf("before Describe: Host() = %+v, true; want false", h)
	}
	c, _ := servePluginAs(t, ContractVersion, p)
	if _, err := c.Describe(t.Context(), "v0.4.0"); err != nil {
		t.Fatal(err)
	}
	if h, ok := p.Host(); !ok || h != (pluginproto.Host{Version: "v0.4.0", ContractVersion: ContractVersion}) {
		t.Errorf("after Describe: Host() = %+v, %v; want v0.4.0 on contract %d", h, ok, ContractVersion)
	}
}
