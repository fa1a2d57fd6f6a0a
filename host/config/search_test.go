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
		"full":               {"search {\n  pinned = [\"echo\", \"fetch-url\"]\n  limit = 8\n}\n", &Search{Pinned: []string{"echo", "fetch-url"}, Limit: 8}},
		"bounds":             {"search {\n  pinned = []\n  limit = 50\n}\n", &Search{Pinned: []string{}, Limit: 50}},
		"least limit":        {"search {\n  limit = 1\n}\n", &Search{Limit: 1}},
		"empty block":        {"search {}\n", &Search{}},
		"add_found and path": {"search {\n  add_found = 16\n  path = \"/mcp/search\"\n}\n", &Search{AddFound: 16, Path: "/mcp/search"}},
		"add_found bounds":   {"search {\n  add_found = 64\n  path = \"/a-b_c.d~e/f\"\n}\n", &Search{AddFound: 64, Path: "/a-b_c.d~e/f"}},
		"add_found off":      {"search {\n  add_found = 0\n}\n", &Search{}},
		"absent":             {"tasks {}\n", nil},
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
		"no limit":           {"search {\n  limit = 0\n}\n", `plughost.hcl:2,11-12: Invalid limit; limit must be a whole number from 1 to 50`},
		"big limit":          {"search {\n  limit = 51\n}\n", `Invalid limit; limit must be a whole number from 1 to 50`},
		"string limit":       {"search {\n  limit = \"8\"\n}\n", `Invalid limit; limit must be a whole number from 1 to 50`},
		"pinned string":      {"search {\n  pinned = \"echo\"\n}\n", `plughost.hcl:2,12-18: Invalid pinned; pinned must be a list of tool names, such as ["echo", "fetch"]`},
		"pinned number":      {"search {\n  pinned = [\"echo\", 3]\n}\n", `Invalid pinned; pinned must be a list of tool names`},
		"bad name":           {"search {\n  pinned = [\"files.read\"]\n}\n", `Invalid pinned; "files.read" is no tool name clients see`},
		"long name":          {"search {\n  pinned = [\"" + strings.Repeat("a", 65) + "\"]\n}\n", `is no tool name clients see: 1 to 64`},
		"pinned twice":       {"search {\n  pinned = [\"echo\", \"echo\"]\n}\n", `Invalid pinned; "echo" is pinned twice`},
		"null pinned":        {"search {\n  pinned = null\n}\n", `Invalid pinned; pinned must be set`},
		"two blocks":         {"search {}\nsearch {}\n", `plughost.hcl:2,1-7: Duplicate search block`},
		"typo":               {"search {\n  pined = []\n}\n", `Did you mean "pinned"?`},
		"pinned in tasks":    {"tasks {\n  pinned = []\n}\n", `"pinned" belongs in search { }.`},
		"add_found -1":       {"search {\n  add_found = -1\n}\n", `plughost.hcl:2,15-17: Invalid add_found; add_found must be a whole number from 0 to 64`},
		"add_found 65":       {"search {\n  add_found = 65\n}\n", `Invalid add_found; add_found must be a whole number from 0 to 64`},
		"add_found 1.5":      {"search {\n  add_found = 1.5\n}\n", `Invalid add_found; add_found must be a whole number`},
		"path number":        {"search {\n  path = 3\n}\n", `plughost.hcl:2,10-11: Invalid path; path must be a string such as "/mcp/search"`},
		"path relative":      {"search {\n  path = \"mcp/search\"\n}\n", `Invalid path; "mcp/search" is no clean absolute path`},
		"path trailing /":    {"search {\n  path = \"/mcp/search/\"\n}\n", `"/mcp/search/" is no clean absolute path`},
		"path dots":          {"search {\n  path = \"/mcp/../x\"\n}\n", `"/mcp/../x" is no clean absolute path`},
		"path query":         {"search {\n  path = \"/search?x=1\"\n}\n", `"/search?x=1": a path is at most 256 of a-z`},
		"path space":         {"search {\n  path = \"/tool search\"\n}\n", `a path is at most 256 of a-z`},
		"path long":          {"search {\n  path = \"/" + strings.Repeat("a", 256) + "\"\n}\n", `a path is at most 256`},
		"path root":          {"search {\n  path = \"/\"\n}\n", `Invalid path; "/" names no endpoint`},
		"path /mcp":          {"search {\n  path = \"/mcp\"\n}\n", `Invalid path; "/mcp" is served already (the HTTP listener serves /mcp, /sse, /message, /healthz, /readyz)`},
		"path /readyz":       {"search {\n  path = \"/readyz\"\n}\n", `"/readyz" is served already`},
		"add_found in tasks": {"tasks {\n  add_found = 1\n}\n", `"add_found" belongs in search { }.`},
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
