package config

import (
	"strings"
	"testing"
	"time"

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
		"description":        {"search {\n  description = \"Finds our tools.\"\n}\n", &Search{Description: "Finds our tools."}},
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
		"path /mcp":          {"search {\n  path = \"/mcp\"\n}\n", `Invalid path; "/mcp" is served already (the HTTP listener serves /mcp, /sse, /message, /metrics, /healthz, /readyz)`},
		"path /readyz":       {"search {\n  path = \"/readyz\"\n}\n", `"/readyz" is served already`},
		"add_found in tasks": {"tasks {\n  add_found = 1\n}\n", `"add_found" belongs in search { }.`},
		"empty description":  {"search {\n  description = \" \"\n}\n", `Invalid description; description must be search_tools' description: a string of 1 to 16384 bytes`},
		"long description":   {"search {\n  description = \"" + strings.Repeat("a", 16385) + "\"\n}\n", `Invalid description`},
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

func TestParseEmbeddings(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		src  string
		want *Embeddings
	}{
		"full": {`search {
  embeddings {
    url          = "https://api.openai.com/v1"
    model        = "text-embedding-3-small"
    api_key_file = "secrets/openai"
    dimensions   = 256
    timeout      = "30s"
  }
}
`, &Embeddings{URL: "https://api.openai.com/v1", Model: "text-embedding-3-small", APIKeyFile: "/etc/plughost/secrets/openai", Dimensions: 256, Timeout: 30 * time.Second}},
		"env key": {"search {\n  embeddings {\n    url = \"http://127.0.0.1:11434/v1\"\n    model = \"nomic-embed-text\"\n    api_key_env = \"OPENAI_API_KEY\"\n  }\n}\n",
			&Embeddings{URL: "http://127.0.0.1:11434/v1", Model: "nomic-embed-text", APIKeyEnv: "OPENAI_API_KEY"}},
		"no key": {"search {\n  embeddings {\n    url = \"http://127.0.0.1:11434/v1\"\n    model = \"m\"\n  }\n}\n",
			&Embeddings{URL: "http://127.0.0.1:11434/v1", Model: "m"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(c.src), "/etc/plughost/plughost.hcl")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.Search.Embeddings); diff != "" {
				t.Errorf("embeddings block (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseEmbeddingsErrors(t *testing.T) {
	t.Parallel()
	block := func(body string) string { return "search {\n  embeddings {\n" + body + "  }\n}\n" }
	const ok = "    url = \"http://127.0.0.1:11434/v1\"\n    model = \"m\"\n"
	for name, c := range map[string]struct{ src, want string }{
		"no url":      {block("    model = \"m\"\n"), `Missing required argument; The argument "url" is required`},
		"no model":    {block("    url = \"http://127.0.0.1:11434/v1\"\n"), `The argument "model" is required`},
		"not http":    {block("    url = \"127.0.0.1:11434\"\n    model = \"m\"\n"), `plughost.hcl:3,11-28: Invalid url; url must be an http:// or https:// URL`},
		"key in url":  {block("    url = \"https://me:sk@api.example/v1\"\n    model = \"m\"\n"), `the key goes in api_key_file or api_key_env`},
		"empty model": {block("    url = \"http://h/v1\"\n    model = \" \"\n"), `Invalid model`},
		"two keys":    {block(ok + "    api_key_file = \"k\"\n    api_key_env = \"K\"\n"), `plughost.hcl:2,14-14: Two keys; the embeddings block may name api_key_file or api_key_env, not both`},
		"bad env":     {block(ok + "    api_key_env = \"A=B\"\n"), `Invalid api_key_env`},
		"dimensions":  {block(ok + "    dimensions = 0\n"), `dimensions must be a whole number from 1 to 16384`},
		"timeout":     {block(ok + "    timeout = \"5m\"\n"), `timeout must be from 1s to 2m, not 5m0s`},
		"key inline":  {block(ok + "    api_key = \"sk-123\"\n"), `Unsupported argument; An argument named "api_key" is not expected here`},
		"two blocks":  {"search {\n  embeddings {\n" + ok + "  }\n  embeddings {\n" + ok + "  }\n}\n", `Duplicate embeddings block`},
		"outside":     {"embeddings {\n" + ok + "}\n", `Unsupported block type`},
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
