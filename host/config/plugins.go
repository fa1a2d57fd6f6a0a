package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/plughost/plughost/host/expose"
	"github.com/plughost/plughost/host/naming"
)

// Plugins holds the settings of the plugins block. A zero field is one the
// file does not set.
type Plugins struct {
	// Start is "eager" or "lazy"; "" when not set.
	Start string
	// IdleTimeout is idle_timeout; 0 when not set.
	IdleTimeout time.Duration
	// StartTimeout is start_timeout; 0 when not set.
	StartTimeout time.Duration
	// CacheOff is true for cache = false.
	CacheOff bool
	// CacheDir is the directory of cache = "DIR"; "" when not set or a
	// bool.
	CacheDir string
	// Plugin holds, by provider name, the plugin blocks' start and
	// idle_timeout (zero when not set: the block's default applies).
	Plugin map[string]PluginStart
	// Expose holds, by provider name, the plugin blocks' tools, prompts
	// and resources lists (expose.go); absent for a plugin without any.
	Expose map[string]*expose.Rules
	// InstallTimeout is install_timeout: the limit of a declared
	// server's package install; 0 when not set.
	InstallTimeout time.Duration
	// BundleLimits is the bundle_limits block (bundlelimits.go).
	BundleLimits BundleLimits
}

// PluginStart is one plugin's start mode, idle timeout and start
// timeout.
type PluginStart struct {
	Start        string
	IdleTimeout  time.Duration
	StartTimeout time.Duration
}

var startSchema = hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "start"}, {Name: "idle_timeout"}, {Name: "start_timeout"}}}

func (p *Plugins) decode(body hcl.Body) error {
	schema := hcl.BodySchema{
		Attributes: append(slices.Clone(startSchema.Attributes), hcl.AttributeSchema{Name: "cache"}, hcl.AttributeSchema{Name: "install_timeout"}),
		Blocks:     []hcl.BlockHeaderSchema{{Type: "plugin", LabelNames: []string{"name"}}, {Type: "bundle_limits"}},
	}
	content, diags := body.Content(&schema)
	if diags.HasErrors() {
		return diags
	}
	var def PluginStart
	if err := decodeStart(&def, content.Attributes); err != nil {
		return err
	}
	p.Start, p.IdleTimeout, p.StartTimeout = def.Start, def.IdleTimeout, def.StartTimeout
	if a, ok := content.Attributes["cache"]; ok {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return diags
		}
		switch {
		case v.IsNull() || !v.IsKnown():
			return diag(a.Expr.Range(), "Invalid cache", "cache must be true, false or a directory")
		case v.Type() == cty.Bool:
			p.CacheOff = v.False()
		case v.Type() == cty.String && strings.TrimSpace(v.AsString()) != "":
			p.CacheDir = v.AsString()
		default:
			return diag(a.Expr.Range(), "Invalid cache", "cache must be true, false or a directory")
		}
	}
	if a, ok := content.Attributes["install_timeout"]; ok {
		want := `install_timeout must be a positive duration such as "10m"`
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return diags
		}
		if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
			return diag(a.Expr.Range(), "Invalid install_timeout", want)
		}
		d, err := time.ParseDuration(v.AsString())
		if err != nil || d <= 0 {
			return diag(a.Expr.Range(), "Invalid install_timeout", want)
		}
		p.InstallTimeout = d
	}
	for _, b := range content.Blocks {
		if b.Type == "bundle_limits" {
			if err := p.BundleLimits.decode(b.Body); err != nil {
				return err
			}
			continue
		}
		name, err := naming.ForLabel(b.Labels[0])
		if err != nil {
			return diag(b.LabelRanges[0], "Invalid plugin name", err.Error())
		}
		if _, dup := p.Plugin[name]; dup {
			return diag(b.DefRange, "Duplicate plugin block", fmt.Sprintf("plugin %q already has a block", name))
		}
		pc, diags := b.Body.Content(&pluginSchema)
		if diags.HasErrors() {
			return diags
		}
		var ps PluginStart
		if err := decodeStart(&ps, pc.Attributes); err != nil {
			return err
		}
		p.Plugin[name] = ps
		rules, err := decodeExpose(pc.Blocks)
		if err != nil {
			return err
		}
		if !rules.Empty() {
			if p.Expose == nil {
				p.Expose = map[string]*expose.Rules{}
			}
			p.Expose[name] = rules
		}
	}
	return nil
}

// decodeStart reads start, idle_timeout and start_timeout.
func decodeStart(ps *PluginStart, attrs hcl.Attributes) error {
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		a := attrs[name]
		if name != "start" && name != "idle_timeout" && name != "start_timeout" {
			continue
		}
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return diags
		}
		switch name {
		case "start":
			if v.IsNull() || !v.IsKnown() || v.Type() != cty.String || (v.AsString() != "eager" && v.AsString() != "lazy") {
				return diag(a.Expr.Range(), "Invalid start", `start must be "eager" or "lazy"`)
			}
			ps.Start = v.AsString()
		case "idle_timeout", "start_timeout":
			want := name + ` must be a positive duration such as "10m" or "30s"`
			if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
				return diag(a.Expr.Range(), "Invalid "+name, want)
			}
			d, err := time.ParseDuration(v.AsString())
			if err != nil || d <= 0 {
				return diag(a.Expr.Range(), "Invalid "+name, want)
			}
			if name == "idle_timeout" {
				ps.IdleTimeout = d
			} else {
				ps.StartTimeout = d
			}
		}
	}
	return nil
}
