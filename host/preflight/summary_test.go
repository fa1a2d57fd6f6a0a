package preflight

import (
	"testing"

	"github.com/plughost/plughost/host/config"
)

// TestSummary: the file and where it was found, then each block it sets
// up; no file, the defaults.
func TestSummary(t *testing.T) {
	t.Parallel()
	parse := func(src string) *config.Config {
		t.Helper()
		cfg, err := config.Parse([]byte(src), "c.hcl")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	tests := map[string]struct {
		cfg        *config.Config
		path, from string
		want       string
	}{
		"no file": {cfg: parse(""), want: "no configuration file (every setting has its default): 0 sandbox plugin block(s), trust mode open"},
		"blocks": {cfg: parse("sandbox {\n  plugin \"a\" {}\n}\ntrust {\n  mode = \"pinned\"\n}\nsearch {}\n"), path: "/c.hcl", from: config.FromFlag,
			want: "/c.hcl (--config): 1 sandbox plugin block(s), trust mode pinned, tool search mode"},
	}
	for name, tc := range tests {
		if got := (&Report{Config: tc.cfg}).Summary(tc.path, tc.from); got != tc.want {
			t.Errorf("%s: Summary =\n %s\nwant\n %s", name, got, tc.want)
		}
	}
}
