package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr(s string) *string { return &s }

func TestParseOverrides(t *testing.T) {
	t.Parallel()
	src := `
override "search_issues" {
  plugin      = "github"
  title       = "Search issues"
  description = "Searches the issues of our repositories."
  annotations {
    readOnlyHint  = true
    openWorldHint = false
  }
}
override "search_issues" {
  description = "Any plugin's search_issues."
}
override "summarize" {
  kind        = "prompt"
  description = ""
}
override "docs://handbook" {
  kind  = "resource"
  title = "Handbook"
  annotations {
    audience = ["user"]
    priority = 0.5
  }
}
`
	cfg, err := Parse([]byte(src), "plughost.hcl")
	if err != nil {
		t.Fatal(err)
	}
	want := []Override{
		{Name: "search_issues", Kind: OverrideTool, Plugin: "github", Title: ptr("Search issues"),
			Description: ptr("Searches the issues of our repositories."), Annotations: map[string]any{"readOnlyHint": true, "openWorldHint": false}},
		{Name: "search_issues", Kind: OverrideTool, Description: ptr("Any plugin's search_issues.")},
		{Name: "summarize", Kind: OverridePrompt, Description: ptr("")},
		{Name: "docs://handbook", Kind: OverrideResource, Title: ptr("Handbook"), Annotations: map[string]any{"audience": []string{"user"}, "priority": 0.5}},
	}
	if diff := cmp.Diff(want, cfg.Overrides); diff != "" {
		t.Errorf("overrides (-want +got):\n%s", diff)
	}
}

func TestParseOverrideErrors(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ src, want string }{
		"empty":           {`override "a" {}`, `plughost.hcl:1,1-13: Empty override; override "a" sets nothing: give it a title, a description or an annotations block`},
		"kind":            {`override "a" { kind = "tools" }`, `Invalid kind; kind must be "tool", "prompt" or "resource", not "tools"`},
		"plugin":          {`override "a" { plugin = "Bad Name" }`, `Invalid plugin;`},
		"title lines":     {`override "a" { title = "two\nlines" }`, `Invalid title; title must be one line of 1 to 256 bytes`},
		"title number":    {`override "a" { title = 3 }`, `Invalid title; title must be a string`},
		"long":            {`override "a" { description = "` + strings.Repeat("x", 16385) + `" }`, `description must be at most 16384 bytes, not 16385`},
		"uri as a tool":   {`override "docs://x" { title = "x" }`, `"docs://x" looks like a URI: a resource's override says kind = "resource"`},
		"empty label":     {`override "" { title = "x" }`, `Invalid override; the label names the overridden item`},
		"unknown hint":    {"override \"a\" {\n  annotations {\n    readonly = true\n  }\n}", `Invalid annotation; a tool's annotations are destructiveHint, idempotentHint, openWorldHint, readOnlyHint, title, not "readonly"`},
		"hint not bool":   {"override \"a\" {\n  annotations {\n    readOnlyHint = \"yes\"\n  }\n}", `readOnlyHint must be true or false`},
		"prompt hints":    {"override \"a\" {\n  kind = \"prompt\"\n  annotations {\n    title = \"x\"\n  }\n}", `Invalid annotations; a prompt has no annotations`},
		"priority":        {"override \"r://a\" {\n  kind = \"resource\"\n  annotations {\n    priority = 2\n  }\n}", `priority must be a number from 0 to 1`},
		"audience":        {"override \"r://a\" {\n  kind = \"resource\"\n  annotations {\n    audience = [\"user\", \"user\"]\n  }\n}", `audience must be a list of "user" and "assistant", each once`},
		"two annotations": {"override \"a\" {\n  annotations {}\n  annotations {}\n}", `Duplicate annotations block`},
		"twice":           {"override \"a\" { title = \"x\" }\noverride \"a\" { title = \"y\" }", `plughost.hcl:2,1-13: Duplicate override; another override block is of tool "a": merge them into one`},
		"twice of plugin": {"override \"a\" {\n  plugin = \"p\"\n  title = \"x\"\n}\noverride \"a\" {\n  plugin = \"p\"\n  title = \"y\"\n}", `of tool "a" of plugin p: merge them`},
		"unknown member":  {`override "a" { titel = "x" }`, `Unsupported argument`},
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
