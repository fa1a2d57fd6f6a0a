package config

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// Every block is read even when another has mistakes: the file's errors
// come together (plughost check lists each), not the first one and a
// count; an unknown key gets the nearest valid key when hcl suggests none.
func TestEveryDiagnostic(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		src  string
		want []string // a substring of each diagnostic, in order
	}{
		"two blocks": {"audit {\n  fil = \"a\"\n}\nsandbox {\n  memory = \"lots\"\n}\n",
			[]string{`"file" is required`, `Did you mean "file"?`, `Invalid memory`}},
		"a duplicate block and an unknown key": {"limits {\n}\nlimits {\n}\ntrust {\n  mod = \"open\"\n}\n",
			[]string{`Duplicate limits block`, `Did you mean "mode"?`}},
		"far from any key of the block": {"sandbox {\n  alow_network = \"all\"\n}\n",
			[]string{`The nearest valid key is "allow_net", which belongs in sandbox { }`}},
		"nothing near": {"sandbox {\n  zzzzzzzzzzzzzzzzzzz = 1\n}\n",
			[]string{`"zzzzzzzzzzzzzzzzzzz" is not expected here.`}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(c.src), "plughost.hcl")
			diags, ok := err.(hcl.Diagnostics)
			if !ok {
				t.Fatalf("Parse = %v (%T); want hcl.Diagnostics", err, err)
			}
			if len(diags) != len(c.want) {
				t.Fatalf("%d diagnostics, want %d: %v", len(diags), len(c.want), diags)
			}
			for i, w := range c.want {
				if got := diags[i].Summary + ": " + diags[i].Detail; !strings.Contains(got, w) {
					t.Errorf("diagnostic %d = %q; want %q in it", i, got, w)
				}
			}
			if strings.Contains(c.src, "zzzz") && strings.Contains(diags[0].Detail, "nearest") {
				t.Errorf("a key far from every key got a suggestion: %q", diags[0].Detail)
			}
		})
	}
}
