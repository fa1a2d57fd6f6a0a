package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
)

// TestWarnOpenTrust: serving beyond loopback while a plugin may be in
// mode open is warned about; loopback, or no plugin open, is not.
func TestWarnOpenTrust(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		config string
		addr   string
		warn   bool
	}{
		"open by default, beyond loopback": {addr: "0.0.0.0:8080", warn: true},
		"open by default, on loopback":     {addr: "127.0.0.1:8080"},
		"localhost":                        {addr: "localhost:8080"},
		"pinned, beyond loopback":          {config: "trust {\n  mode = \"pinned\"\n}\n", addr: "[::]:8080"},
		"pinned, one plugin open": {config: "trust {\n  mode = \"pinned\"\n  plugin \"x\" {\n    mode = \"open\"\n  }\n}\n",
			addr: "192.0.2.1:8080", warn: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Parse([]byte(tc.config), "c.hcl")
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			warnOpenTrust(cfg.Trust, tc.addr, "/plugins", hclog.New(&hclog.LoggerOptions{Output: &out}))
			if got := strings.Contains(out.String(), `[WARN]  serving beyond loopback with plugins in trust mode "open"`); got != tc.warn {
				t.Errorf("warned %v, want %v: %q", got, tc.warn, out.String())
			}
		})
	}
}

// TestTrustFileDefault: the trust file is the block's, else in the state
// directory, out of the plugin directory.
func TestTrustFileDefault(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	got, err := TrustFile(&config.Config{})
	if err != nil || got != filepath.Join(state, "plughost", "trust.json") {
		t.Errorf("default trust file %q, %v", got, err)
	}
	t.Setenv("XDG_STATE_HOME", "")
	home, _ := os.UserHomeDir()
	if got, _ := TrustFile(&config.Config{}); got != filepath.Join(home, ".local", "state", "plughost", "trust.json") {
		t.Errorf("trust file without XDG_STATE_HOME: %q", got)
	}
	if got, _ := TrustFile(&config.Config{Trust: config.Trust{File: "/etc/plughost/trust.json"}}); got != "/etc/plughost/trust.json" {
		t.Errorf("the block's trust file: %q", got)
	}
}
