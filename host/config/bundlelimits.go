package config

import (
	"fmt"
	"math/big"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// BundleLimits holds the settings of the bundle_limits block inside
// plugins: what an MCP Bundle (.mcpb) may unpack to. A zero field is one
// the file does not set (package mcpb's default applies).
//
//	plugins {
//	  bundle_limits {
//	    max_files      = 20000     # entries of the zip
//	    max_file_size  = "256MiB"  # one file, uncompressed
//	    max_total_size = "1GiB"    # all files, uncompressed
//	  }
//	}
type BundleLimits struct {
	MaxFiles     int
	MaxFileSize  int64
	MaxTotalSize int64
}

var bundleLimitsSchema = hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "max_files"}, {Name: "max_file_size"}, {Name: "max_total_size"}}}

// decode reads a bundle_limits block.
func (l *BundleLimits) decode(body hcl.Body) error {
	content, diags := body.Content(&bundleLimitsSchema)
	if diags.HasErrors() {
		return diags
	}
	for name, a := range content.Attributes {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return diags
		}
		if v.IsNull() || !v.IsKnown() {
			return diag(a.Expr.Range(), "Invalid "+name, name+" must be set to a value")
		}
		switch name {
		case "max_files":
			var n int64
			acc := big.Above
			if v.Type() == cty.Number {
				n, acc = v.AsBigFloat().Int64()
			}
			if acc != big.Exact || n <= 0 || n > 1<<24 {
				return diag(a.Expr.Range(), "Invalid max_files", fmt.Sprintf("max_files must be a whole number from 1 to %d", 1<<24))
			}
			l.MaxFiles = int(n)
		default:
			n, err := parseBytes(v)
			if err == nil && n == 0 {
				err = fmt.Errorf("a size above zero")
			}
			if err != nil {
				return diag(a.Expr.Range(), "Invalid "+name, name+" must be "+err.Error())
			}
			if name == "max_file_size" {
				l.MaxFileSize = n
			} else {
				l.MaxTotalSize = n
			}
		}
	}
	return nil
}
