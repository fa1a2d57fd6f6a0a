package config

import (
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Audit holds the settings of the audit block: its presence turns on the
// audit log, one JSON line per tool call (host/audit). plughost serve's
// --audit-log and --audit-arguments win over it.
//
//	audit {
//	  file      = "/var/log/plughost/audit.jsonl"  # appended to, created 0600; "-" for stderr
//	  arguments = false                            # true: each call's arguments too (cut beyond 4 KiB)
//	}
type Audit struct {
	// File is file, joined to the configuration file's directory when
	// relative; "-" is stderr.
	File string
	// Arguments is arguments: include each call's arguments.
	Arguments bool
}

var auditSchema = hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "file", Required: true}, {Name: "arguments"}}}

// decode reads the audit block; dir is the configuration file's
// directory, against which a relative file is resolved.
func (au *Audit) decode(body hcl.Body, dir string) error {
	_, err := attributes(body, &auditSchema, func(name string, a *hcl.Attribute, v cty.Value) error {
		switch name {
		case "file":
			if v.Type() != cty.String || strings.TrimSpace(v.AsString()) == "" {
				return diag(a.Expr.Range(), "Invalid file", `file must be the path of the audit log, such as "/var/log/plughost/audit.jsonl", or "-" for stderr`)
			}
			au.File = v.AsString()
			if au.File != "-" && !filepath.IsAbs(au.File) {
				au.File = filepath.Join(dir, au.File)
			}
		case "arguments":
			if v.Type() != cty.Bool {
				return diag(a.Expr.Range(), "Invalid arguments", "arguments must be true or false")
			}
			au.Arguments = v.True()
		}
		return nil
	})
	return err
}
