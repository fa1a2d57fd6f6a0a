package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLimits(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		src  string
		want Limits
	}{
		"full": {`
limits {
  sessions        = 200
  in_flight       = 16
  replay_bytes    = "1MiB"
  replay_budget   = "1GiB"
  result_size     = "8MiB"
  items           = 500
  definition_size = "32KiB"
  list_size       = "4MiB"
  notification_rate = 20
  plugin_in_flight = 32
  listen_bytes    = "64KiB"
  listen_budget   = "4MiB"
}
`, Limits{Sessions: 200, InFlight: 16, ReplayBytes: 1 << 20, ReplayBudget: 1 << 30, ResultSize: 8 << 20, Items: 500, DefinitionSize: 32 << 10, ListSize: 4 << 20,
			NotificationRate: 20, PluginInFlight: 32, ListenBytes: 64 << 10, ListenBudget: 4 << 20}},
		"lower bounds": {"limits {\n  sessions = 1\n  in_flight = 1\n  items = 1\n  result_size = 1024\n  definition_size = \"1KiB\"\n}\n",
			Limits{Sessions: 1, InFlight: 1, Items: 1, ResultSize: 1 << 10, DefinitionSize: 1 << 10}},
		"empty block": {"limits {}\n", Limits{}},
		"absent":      {"", Limits{}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(c.src), "plughost.hcl")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.Limits); diff != "" {
				t.Errorf("limits block (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseLimitsErrors: each mistake is named with its file, line and
// column, and what was expected.
func TestParseLimitsErrors(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"limits {\n  sessions = 0\n}\n":               `plughost.hcl:2,14-15: Invalid sessions; sessions must be a whole number from 1 to 1000000`,
		"limits {\n  in_flight = 1.5\n}\n":            `plughost.hcl:2,15-18: Invalid in_flight; in_flight must be a whole number from 1 to 100000`,
		"limits {\n  result_size = \"2GiB\"\n}\n":     `plughost.hcl:2,17-23: Invalid result_size; result_size must be from 1KiB to 1GiB, not 2147483648 bytes`,
		"limits {\n  definition_size = \"lots\"\n}\n": `plughost.hcl:2,21-27: Invalid definition_size; definition_size must be a size such as "512MiB"`,
		"limits {\n  max_sessions = 10\n}\n":          `plughost.hcl:2,3-15: Unsupported argument`,
		"limits {\n  notification_rate = 0\n}\n":      `plughost.hcl:2,23-24: Invalid notification_rate; notification_rate must be a whole number from 1 to 100000`,
		"limits {}\nlimits {}\n":                      `plughost.hcl:2,1-7: Duplicate limits block`,
		"tasks {\n  result_size = \"1MiB\"\n}\n":      `"result_size" belongs in limits { }`,
	} {
		_, err := Parse([]byte(src), "plughost.hcl")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", src, err, want)
		}
	}
}
