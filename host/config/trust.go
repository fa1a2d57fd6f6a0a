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
//
//	  bundles {                                           # .mcpb bundles' signatures (see Bundles)
//	    trusted_roots     = ["/etc/plughost/bundle-ca.pem"]
//	    require_signature = true
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
	// Bundles is the bundles block: who may sign .mcpb bundles.
	Bundles Bundles
}

// Bundles holds the settings of the bundles block inside trust: the
// signature `mcpb sign` appends to a .mcpb bundle, checked by package
// bundlesig where a bundle is opened. It lives in the trust block
// because it answers the trust block's question (which plugin files may
// run) for bundles. A bundle's signature, when it has one, is always
// checked to match its bytes; with trusted_roots it must also chain to
// one of them (a signature by anyone else refuses the bundle); with
// require_signature an unsigned bundle is refused too.
type Bundles struct {
	// TrustedRoots are the PEM files of the certificate authorities
	// trusted to sign bundles (trusted_roots), joined to the
	// configuration file's directory; nil when not set.
	TrustedRoots []string
	// RequireSignature is require_signature: an unsigned bundle does not
	// run. It needs TrustedRoots.
	RequireSignature bool
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
	Blocks:     []hcl.BlockHeaderSchema{{Type: "plugin", LabelNames: []string{"name"}}, {Type: "bundles"}},
}

var bundlesSchema = hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "trusted_roots"}, {Name: "require_signature"}}}

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
	bundles := 0
	for _, b := range content.Blocks {
		if b.Type == "bundles" {
			if bundles++; bundles > 1 {
				return diag(b.DefRange, "Duplicate bundles block", "the trust block may have one bundles block")
			}
			if err := t.Bundles.decode(b, dir); err != nil {
				return err
			}
			continue
		}
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

// decode reads the bundles block b; dir is the configuration file's.
func (bs *Bundles) decode(b *hcl.Block, dir string) error {
	_, err := attributes(b.Body, &bundlesSchema, func(name string, a *hcl.Attribute, v cty.Value) error {
		switch name {
		case "trusted_roots":
			roots, ok := stringList(v)
			if !ok || len(roots) == 0 || slices.ContainsFunc(roots, func(r string) bool { return strings.TrimSpace(r) == "" }) {
				return diag(a.Expr.Range(), "Invalid trusted_roots", "trusted_roots must be a list of the paths of PEM files of CA certificates")
			}
			for _, r := range roots {
				bs.TrustedRoots = append(bs.TrustedRoots, inDir(dir, r))
			}
		case "require_signature":
			if v.Type() != cty.Bool {
				return diag(a.Expr.Range(), "Invalid require_signature", "require_signature must be true or false")
			}
			bs.RequireSignature = v.True()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if bs.RequireSignature && len(bs.TrustedRoots) == 0 {
		return diag(b.DefRange, "Missing trusted_roots",
			"require_signature needs trusted_roots: the certificate authorities whose signed bundles may run")
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
