package preflight

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// locator returns a function that finds, in the configuration file src
// (named filename), the line of a key by its path of block types and
// attribute name ("tasks", "redis", "address"): "filename:line", or the
// line of the innermost block found when the key is not set there; "" when
// not even the first block is (a setting that came from a default or the
// environment).
func locator(src []byte, filename string) func(path ...string) string {
	if len(src) == 0 {
		return func(...string) string { return "" }
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return func(...string) string { return "" }
	}
	root, _ := file.Body.(*hclsyntax.Body)
	return func(path ...string) string {
		body, found := root, ""
		for i, name := range path {
			if body == nil {
				break
			}
			if i == len(path)-1 {
				if a, ok := body.Attributes[name]; ok {
					return at(a.NameRange)
				}
			}
			var next *hclsyntax.Body
			for _, b := range body.Blocks {
				if b.Type == name {
					next, found = b.Body, at(b.TypeRange)
					break
				}
			}
			body = next
		}
		return found
	}
}

func at(r hcl.Range) string { return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line) }
