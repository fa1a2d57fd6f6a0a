package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// A configuration file's settings as written, each with its line: what
// the console's configuration page shows beside the flags and the
// environment, so an operator sees where each value in force came from.

// Setting is one attribute of a configuration file.
type Setting struct {
	// Name is the attribute's path: its blocks' types and labels, then
	// its own name ("limits.sessions", `sandbox.plugin "echo".net`).
	Name string
	// Value is the attribute's expression as the file writes it (at most
	// MaxSettingValue bytes, cut with "…"); "(set)" for one that may
	// hold a secret (Secret).
	Value string
	// Line is the attribute's line in the file.
	Line int
}

// MaxSettingValue bounds Setting.Value: an access rule or a heredoc
// may be long, a page shows its start.
const MaxSettingValue = 1 << 10

// Settings lists every attribute of the configuration file src (named
// filename in errors), in the file's order. Its errors are the syntax
// errors Parse reports too.
func Settings(src []byte, filename string) ([]Setting, error) {
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok { // hclsyntax.ParseConfig's body always is one
		return nil, nil
	}
	var out []Setting
	collectSettings(&out, src, "", body)
	slices.SortStableFunc(out, func(a, b Setting) int { return cmp.Compare(a.Line, b.Line) })
	return out, nil
}

// collectSettings appends body's attributes, and those of its blocks,
// under the path prefix.
func collectSettings(out *[]Setting, src []byte, prefix string, body *hclsyntax.Body) {
	for name, a := range body.Attributes {
		value := Secret(name, string(a.Expr.Range().SliceBytes(src)))
		if len(value) > MaxSettingValue {
			value = strings.ToValidUTF8(value[:MaxSettingValue], "") + "…"
		}
		*out = append(*out, Setting{Name: prefix + name, Value: value, Line: a.NameRange.Start.Line})
	}
	for _, b := range body.Blocks {
		path := prefix + b.Type
		for _, l := range b.Labels {
			path += " " + strconv.Quote(l)
		}
		collectSettings(out, src, path+".", b.Body)
	}
}

// Secret is value, or "(set)" when the setting name may hold a secret
// (a password, a token, a secret or an API key written in place; the
// configuration names files and variables that hold them, *_file and
// *_env, which are shown).
func Secret(name, value string) string {
	n := strings.ToLower(name)
	if strings.HasSuffix(n, "_file") || strings.HasSuffix(n, "_env") {
		return value
	}
	for _, w := range []string{"password", "secret", "token", "api_key", "apikey", "private_key"} {
		if strings.Contains(n, w) {
			return "(set)"
		}
	}
	return value
}
