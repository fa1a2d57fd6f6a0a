package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSearch(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		src  string
		want *Search
	}{
		"full":        {"search {\n  pinned = [\"echo\", \"fetch-url\"]\n  limit = 8\n}\n", &Search{Pinned: []string{"echo", "fetch-url"}, Limit: 8}},
		"bounds":      {"search {\n  pinned = []\n  limit = 50\n}\n", &Search{Pinned: []string{}, Limit: 50}},
		"least limit": {"search {\n  limit = 1\n}\n", &Search{Limit: 1}},
		"empty block": {"search {}\n", &Search{}},
		"absent":      {"tasks {}\n", nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(c.src), "plughost.hcl")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.Search); diff != "" {
				t.Errorf("search block (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseSearchErrors(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ src, want string }{
		"no limit":        {"search {\n  limit = 0\n}\n", `plughost.hcl:2,11-12: Invalid limit; limit must be a whole number from 1 to 50`},
		"big limit":       {"search {\n  limit = 51\n}\n", `Invalid limit; limit must be a whole number from 1 to 50`},
		"string limit":    {"search {\n  limit = \"8\"\n}\n", `Invalid limit; limit must be a whole number from 1 to 50`},
		"pinned string":   {"search {\n  pinned = \"echo\"\n}\n", `plughost.hcl:2,12-18: Invalid pinned; pinned must be a list of tool names, such as ["echo", "fetch"]`},
		"pinned number":   {"search {\n  pinned = [\"echo\", 3]\n}\n", `Invalid pinned; pinned must be a list of tool names`},
		"bad name":        {"search {\n  pinned = [\"files.read\"]\n}\n", `Invalid pinned; "files.read" is no tool name clients see`},
		"long name":       {"search {\n  pinned = [\"" + strings.Repeat("a", 65) + "\"]\n}\n", `is no tool name clients see: 1 to 64`},
		"pinned twice":    {"search {\n  pinned = [\"echo\", \"echo\"]\n}\n", `Invalid pinned; "echo" is pinned twice`},
		"null pinned":     {"search {\n  pinned = null\n}\n", `Invalid pinned; pinned must be set`},
		"two blocks":      {"search {}\nsearch {}\n", `plughost.hcl:2,1-7: Duplicate search block`},
		"typo":            {"search {\n  pined = []\n}\n", `Did you mean "pinned"?`},
		"pinned in tasks": {"tasks {\n  pinned = []\n}\n", `"pinned" belongs in search { }.`},
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
