package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/plughost/plughost/host/naming"
)

// The trust modes, as package trust names them (its Mode values): the
// configuration spells them, and does not import it (nor, through it, the
// plugin contract's dependencies).
const (
	TrustOpen   = "open"
	TrustPinned = "pinned"
	TrustSigned = "signed"
)

// Trust holds the settings of the trust block: which plugin files may run
// (package trust).
//
//	trust {
//	  mode            = "pinned"                          # "open" (default), "pinned" or "signed"
//	  file            = "/etc/plughost/trust.json"        # the approvals; default $XDG_STATE_HOME/plughost/trust.json
//	  allowed_signers = "/etc/plughost/allowed_signers"   # the keys trusted to sign plugins (mode signed)
//
//	  plugin "files" {
//	    mode = "signed"                                   # this plugin's own mode
//	  }
//	}
//
// A plugin block names a plugin as the sandbox block's do (its provider
// name, or its file name). Relative paths are relative to the
// configuration file's directory.
type Trust struct {
	// Mode is mode; "" when not set (open).
	Mode string
	// File is file; "" when not set (plughost's default applies).
	File string
	// AllowedSigners is allowed_signers; "" when not set.
	AllowedSigners string
	// Plugin holds the plugin blocks' modes by provider name.
	Plugin map[string]string
}

// ModeFor returns the named plugin's mode: its block's, else the
// default's, else open.
func (t *Trust) ModeFor(name string) string {
	if m := t.Plugin[name]; m != "" {
		return m
	}
	if t.Mode != "" {
		return t.Mode
	}
	return TrustOpen
}

// Uses reports whether any plugin may be in mode m.
func (t *Trust) Uses(m string) bool {
	if t.Mode == m || (m == TrustOpen && t.Mode == "") {
		return true
	}
	for _, pm := range t.Plugin {
		if pm == m {
			return true
		}
	}
	return false
}

var trustSchema = hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "mode"}, {Name: "file"}, {Name: "allowed_signers"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "plugin", LabelNames: []string{"name"}}},
}

var trustPluginSchema = hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "mode", Required: true}}}

// decode reads the trust block; dir is the configuration file's.
func (t *Trust) decode(body hcl.Body, dir string) error {
	content, err := attributes(body, &trustSchema, func(name string, a *hcl.Attribute, v cty.Value) (err error) {
		switch name {
		case "mode":
			t.Mode, err = trustMode(a, v)
		case "file", "allowed_signers":
			if v.Type() != cty.String || strings.TrimSpace(v.AsString()) == "" {
				return diag(a.Expr.Range(), "Invalid "+name, name+" must be the path of a file")
			}
			if name == "file" {
				t.File = inDir(dir, v.AsString())
			} else {
				t.AllowedSigners = inDir(dir, v.AsString())
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, b := range content.Blocks {
		name, err := naming.ForLabel(b.Labels[0])
		if err != nil {
			return diag(b.LabelRanges[0], "Invalid plugin name", err.Error())
		}
		if _, dup := t.Plugin[name]; dup {
			return diag(b.DefRange, "Duplicate plugin block", fmt.Sprintf("plugin %q already has a block", name))
		}
		_, err = attributes(b.Body, &trustPluginSchema, func(_ string, a *hcl.Attribute, v cty.Value) (err error) {
			t.Plugin[name], err = trustMode(a, v)
			return err
		})
		if err != nil {
			return err
		}
	}
	if t.Uses(TrustSigned) && t.AllowedSigners == "" {
		return diag(content.MissingItemRange, "Missing allowed_signers",
			`a plugin in mode "signed" needs allowed_signers: the file of the keys trusted to sign plugins`)
	}
	return nil
}

// trustMode reads a mode.
func trustMode(a *hcl.Attribute, v cty.Value) (string, error) {
	if v.Type() == cty.String && slices.Contains([]string{TrustOpen, TrustPinned, TrustSigned}, v.AsString()) {
		return v.AsString(), nil
	}
	return "", diag(a.Expr.Range(), "Invalid mode", `mode must be "open", "pinned" or "signed"`)
}
