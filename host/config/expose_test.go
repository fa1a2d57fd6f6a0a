package config

import (
	"strings"
	"testing"
)

func TestParseExpose(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`
plugins {
  plugin "github" {
    start = "eager"
    tools {
      allow = ["search_*", "get_*"]
      deny  = ["get_secret"]
    }
    prompts   { deny = ["*"] }
    resources { allow = ["repo://docs/*"] }
  }
  plugin "plain" {}
}
`), "plughost.hcl")
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Plugins.Expose["github"]
	if r == nil {
		t.Fatal("no rules for github")
	}
	for _, c := range []struct {
		allows bool
		got    bool
		what   string
	}{
		{true, r.Tools.Allows("search_code"), "tool search_code"},
		{false, r.Tools.Allows("get_secret"), "tool get_secret"},
		{false, r.Tools.Allows("delete_repo"), "tool delete_repo"},
		{false, r.Prompts.Allows("review"), "prompt review"},
		{true, r.Resources.Allows("repo://docs/a.md"), "resource repo://docs/a.md"},
		{false, r.Resources.Allows("repo://src/a.go"), "resource repo://src/a.go"},
	} {
		if c.got != c.allows {
			t.Errorf("%s exposed = %v, want %v", c.what, c.got, c.allows)
		}
	}
	if _, ok := cfg.Plugins.Expose["plain"]; ok {
		t.Error("a plugin block without lists has rules")
	}
	if cfg.Plugins.Plugin["github"].Start != "eager" {
		t.Error("start lost beside the lists")
	}
}

func TestParseExposeErrors(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"plugins {\n  plugin \"x\" {\n    tools { allow = \"a\" }\n  }\n}\n":      `plughost.hcl:3,21-24: Invalid allow; allow must be a list of patterns`,
		"plugins {\n  plugin \"x\" {\n    tools { deny = [\"\"] }\n  }\n}\n":      `plughost.hcl:3,20-24: Invalid deny;`,
		"plugins {\n  plugin \"x\" {\n    tools {}\n    tools {}\n  }\n}\n":       `plughost.hcl:4,5-10: Duplicate tools block`,
		"plugins {\n  plugin \"x\" {\n    tools { only = [\"a\"] }\n  }\n}\n":     `plughost.hcl:3,13-17: Unsupported argument`,
		"plugins {\n  plugin \"x\" {\n    commands { allow = [\"a\"] }\n  }\n}\n": `plughost.hcl:3,5-13: Unsupported block type`,
	} {
		_, err := Parse([]byte(src), "plughost.hcl")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", src, err, want)
		}
	}
}
