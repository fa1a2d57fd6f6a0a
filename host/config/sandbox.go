package config

// The sandbox block: the default policy, plugin blocks overriding it, and
// their dir blocks (see the package doc for the syntax).

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/sandbox"
)

var policySchema = hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "strict"}, {Name: "disabled"}, {Name: "allow_read"}, {Name: "allow_write"}, {Name: "allow_net"},
		{Name: "memory"}, {Name: "pids"}, {Name: "files"}, {Name: "cpu"}, {Name: "env"}, {Name: "timeout"}, {Name: "allow_jit"},
		{Name: "tmp_size"}, {Name: "data_size"}, {Name: "allow_exec_written"},
	},
}

// pluginPolicySchema is a plugin block's: the policy's keys and runtime,
// which names one plugin's interpreter.
var pluginPolicySchema = hcl.BodySchema{
	Attributes: append(slices.Clone(policySchema.Attributes), hcl.AttributeSchema{Name: "runtime"}),
	Blocks:     []hcl.BlockHeaderSchema{{Type: "dir", LabelNames: []string{"name"}}},
}

// dirSchema is a dir block's: the directory granted under the block's
// name, and whether the plugin may write in it.
var dirSchema = hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "path", Required: true}, {Name: "write"}},
}

// decodeDir reads a plugin block's dir block.
func decodeDir(b *hcl.Block) (sandbox.Dir, error) {
	d := sandbox.Dir{Name: b.Labels[0]}
	content, diags := b.Body.Content(&dirSchema)
	if diags.HasErrors() {
		return d, diags
	}
	for name, a := range content.Attributes {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return d, diags
		}
		switch {
		case name == "path" && v.Type() == cty.String && v.IsKnown() && !v.IsNull():
			d.Path = v.AsString()
		case name == "write" && v.Type() == cty.Bool && v.IsKnown() && !v.IsNull():
			d.Write = v.True()
		case name == "path":
			return d, diag(a.Expr.Range(), "Invalid path", "path must be a string: the directory's absolute path")
		default:
			return d, diag(a.Expr.Range(), "Invalid write", "write must be true or false")
		}
	}
	return d, nil
}

func (s *Sandbox) decode(body hcl.Body) error {
	schema := policySchema // runtime names one plugin's interpreter: plugin blocks only
	schema.Blocks = []hcl.BlockHeaderSchema{{Type: "plugin", LabelNames: []string{"name"}}}
	content, diags := body.Content(&schema)
	if diags.HasErrors() {
		return diags
	}
	if err := decodePolicy(&s.Default, content.Attributes, false); err != nil {
		return err
	}
	for _, b := range content.Blocks {
		name, err := naming.ForLabel(b.Labels[0])
		if err != nil {
			return diag(b.LabelRanges[0], "Invalid plugin name", err.Error())
		}
		if _, dup := s.Plugins[name]; dup {
			return diag(b.DefRange, "Duplicate plugin block", fmt.Sprintf("plugin %q already has a block", name))
		}
		pc, diags := b.Body.Content(&pluginPolicySchema)
		if diags.HasErrors() {
			return diags
		}
		p := *s.Default.Clone()
		if err := decodePolicy(&p, pc.Attributes, true); err != nil {
			return err
		}
		for _, db := range pc.Blocks {
			d, err := decodeDir(db)
			if err != nil {
				return err
			}
			p.Dirs = append(p.Dirs, d)
		}
		if err := p.Check(); err != nil {
			return diag(b.DefRange, "Invalid plugin block", fmt.Sprintf("plugin %q: %v", name, err))
		}
		s.Plugins[name] = p
	}
	return nil
}

// decodePolicy sets p's fields from attrs; with add, lists add to p's.
func decodePolicy(p *sandbox.Policy, attrs hcl.Attributes, add bool) error {
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		a := attrs[name]
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return diags
		}
		bad := func(want string) error {
			return diag(a.Expr.Range(), "Invalid "+name, fmt.Sprintf("%s must be %s", name, want))
		}
		if v.IsNull() || !v.IsKnown() {
			return bad("set")
		}
		switch name {
		case "strict", "disabled", "allow_exec_written":
			if v.Type() != cty.Bool {
				return bad("true or false")
			}
			*map[string]*bool{"strict": &p.Strict, "disabled": &p.Disabled, "allow_exec_written": &p.AllowExecWritten}[name] = v.True()
		case "allow_jit":
			if v.Type() != cty.Bool {
				return bad("true or false")
			}
			jit := v.True()
			p.AllowJIT = &jit
		case "allow_read", "allow_write", "env":
			list, ok := stringList(v)
			if !ok {
				return bad("a list of strings")
			}
			dst := map[string]*[]string{"allow_read": &p.AllowRead, "allow_write": &p.AllowWrite, "env": &p.Env}[name]
			if add {
				*dst = append(*dst, list...)
			} else {
				*dst = list
			}
		case "allow_net":
			if v.Type() == cty.String {
				switch s := v.AsString(); s {
				case "none", "all":
					p.Net, p.NetAllow = sandbox.NetMode(s), nil
				default:
					return bad(`"none", "all" or a list of "host:port"`)
				}
				break
			}
			list, ok := stringList(v)
			if !ok {
				return bad(`"none", "all" or a list of "host:port"`)
			}
			p.Net, p.NetAllow = sandbox.NetList, list
			if len(list) == 0 {
				p.Net, p.NetAllow = sandbox.NetNone, nil
			}
		case "memory", "tmp_size", "data_size":
			n, err := parseBytes(v)
			if err != nil {
				return bad(err.Error())
			}
			*map[string]*int64{"memory": &p.Memory, "tmp_size": &p.TmpSize, "data_size": &p.DataSize}[name] = n
		case "pids", "files":
			if v.Type() != cty.Number {
				return bad("a whole number")
			}
			bf := v.AsBigFloat()
			i, acc := bf.Int64()
			if acc != big.Exact || i < 1 || i > 1<<20 {
				return bad("a whole number from 1 to 1048576")
			}
			if name == "pids" {
				p.Pids = int(i)
			} else {
				p.Files = int(i)
			}
		case "cpu":
			if v.Type() != cty.Number {
				return bad("a number of cores, such as 0.5 or 2")
			}
			f, _ := v.AsBigFloat().Float64()
			if f < 0 || f > 1024 {
				return bad("a number of cores from 0 to 1024")
			}
			p.CPU = f
		case "runtime":
			var names []string
			for _, r := range sandbox.Runtimes {
				names = append(names, strconv.Quote(string(r)))
			}
			want := strings.Join(names, " or ") + " (for another interpreter, grant what it needs with allow_read)"
			if v.Type() != cty.String || !slices.Contains(sandbox.Runtimes, sandbox.Runtime(v.AsString())) {
				return bad(want)
			}
			p.Runtime = sandbox.Runtime(v.AsString())
		case "timeout":
			if v.Type() != cty.String {
				return bad(`a duration such as "30s" or "2m"`)
			}
			d, err := time.ParseDuration(v.AsString())
			if err != nil || d < 0 {
				return bad(`a duration such as "30s" or "2m"`)
			}
			p.Timeout = d
		}
		if err := p.Check(); err != nil {
			return diag(a.Expr.Range(), "Invalid "+name, err.Error())
		}
	}
	return nil
}

func stringList(v cty.Value) ([]string, bool) {
	t := v.Type()
	if !(t.IsTupleType() || t.IsListType() || t.IsSetType()) {
		return nil, false
	}
	out := []string{}
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return nil, false
		}
		out = append(out, e.AsString())
	}
	return out, true
}
