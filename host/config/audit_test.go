package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAudit(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		src  string
		want *Audit
	}{
		"absolute":  {"audit {\n  file = \"/var/log/a.jsonl\"\n  arguments = true\n}\n", &Audit{File: "/var/log/a.jsonl", Arguments: true}},
		"relative":  {"audit {\n  file = \"a.jsonl\"\n}\n", &Audit{File: "/etc/plughost/a.jsonl"}},
		"stderr":    {"audit {\n  file = \"-\"\n}\n", &Audit{File: "-"}},
		"absent":    {"search {}\n", nil},
		"arguments": {"audit {\n  file = \"-\"\n  arguments = false\n}\n", &Audit{File: "-"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(c.src), "/etc/plughost/plughost.hcl")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.Audit); diff != "" {
				t.Errorf("audit block (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseAuditErrors(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ src, want string }{
		"no file":        {"audit {}\n", `The argument "file" is required`},
		"empty file":     {"audit {\n  file = \" \"\n}\n", `Invalid file; file must be the path of the audit log`},
		"string args":    {"audit {\n  file = \"-\"\n  arguments = \"yes\"\n}\n", `Invalid arguments; arguments must be true or false`},
		"two blocks":     {"audit {\n  file = \"-\"\n}\naudit {\n  file = \"-\"\n}\n", `Duplicate audit block`},
		"args in search": {"search {\n  arguments = true\n}\n", `"arguments" belongs in audit { }.`},
		"typo":           {"audit {\n  file = \"-\"\n  argument = true\n}\n", `Did you mean "arguments"?`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(c.src), "plughost.hcl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}
