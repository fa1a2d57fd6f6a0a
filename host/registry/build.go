package registry

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/packages"
	"github.com/plughost/plughost/internal/ask"
)

// Default package registries: a package whose registryBaseUrl is one of
// these (or none) installs from the registry the user's npm or pip
// settings name.
const (
	DefaultNPM  = "https://registry.npmjs.org"
	DefaultPyPI = "https://pypi.org"
)

// Asker asks for a value once (internal/ask.Asker).
type Asker interface {
	Ask(q ask.Question) (string, error)
}

// Indexes are the package registries the user's settings install from,
// to tell whether a package's registryBaseUrl is honoured.
type Indexes struct {
	// NPM is the npm registry the package named installs from (its
	// scope's registry, else the registry setting); "" for the default.
	NPM func(pkg string) string
	// PyPI is pip's index URL (PIP_INDEX_URL); "" for the default.
	PyPI string
}

// Plan is what installing one choice of a server writes: a server entry
// in the shape of a desktop host's mcpServers (Entry, for
// host/importer), which of its env variables and headers are secret,
// what it came from, and for a bundle what to download.
type Plan struct {
	Server *Server
	Choice *Choice
	Origin declared.Origin

	// Command, Args and Env run a package's server; URL, Transport and
	// Headers reach a remote one.
	Command   string
	Args      []string
	Env       map[string]string
	URL       string
	Transport string
	Headers   map[string]string
	// Secrets are the names of the env variables and headers whose
	// values are secret: they go to files, never into the declaration.
	Secrets []string
	// Spec is the package install-once installs (npm, pypi).
	Spec *packages.Spec
	// BundleURL and BundleSHA256 are an mcpb package's file and digest.
	BundleURL, BundleSHA256 string
}

// Entry is the plan as one server of a desktop host's mcpServers, the
// shape host/importer converts into a declaration.
func (p *Plan) Entry() json.RawMessage {
	type entry struct {
		Type    string            `json:"type,omitempty"`
		Command string            `json:"command,omitempty"`
		Args    []string          `json:"args,omitempty"`
		Env     map[string]string `json:"env,omitempty"`
		URL     string            `json:"url,omitempty"`
		Headers map[string]string `json:"headers,omitempty"`
	}
	b, _ := json.Marshal(entry{Type: p.Transport, Command: p.Command, Args: p.Args, Env: p.Env, URL: p.URL, Headers: p.Headers})
	return b
}

// Build resolves the values of choice c of server s, asking a for those
// not given, into a Plan. registry is where s was found (for the
// Origin). A secret is refused where it would be seen: in an argument
// or in a URL.
func Build(s *Server, c *Choice, registry string, idx Indexes, a Asker) (*Plan, error) {
	p := &Plan{Server: s, Choice: c, Origin: declared.Origin{Registry: registry, Name: s.Name, Version: s.Version, Type: c.Type()}}
	r := &resolver{a: a, plan: p}
	if c.Remote != nil {
		return p, r.remote(c.Remote)
	}
	pkg := c.Package
	if pkg.RegistryType == TypeMCPB {
		if pkg.FileSHA256 == "" {
			return nil, fmt.Errorf("mcpb package %s: no fileSha256 to verify it with", pkg.Identifier)
		}
		if err := CheckURL(pkg.Identifier); err != nil {
			return nil, fmt.Errorf("mcpb package: %w", err)
		}
		p.BundleURL, p.BundleSHA256 = pkg.Identifier, pkg.FileSHA256
		return p, nil // its values are the bundle's user_config, asked when it is installed
	}
	if err := checkBase(pkg, idx); err != nil {
		return nil, err
	}
	runner, err := runnerOf(pkg)
	if err != nil {
		return nil, err
	}
	rt, err := r.args("runtime argument", pkg.RuntimeArguments)
	if err != nil {
		return nil, err
	}
	args, err := r.args("package argument", pkg.PackageArguments)
	if err != nil {
		return nil, err
	}
	ref := pkg.Identifier + "@" + pkg.Version
	if pkg.RegistryType == TypePyPI {
		ref = pkg.Identifier + "==" + pkg.Version
	}
	words := strings.Fields(runner)
	p.Command = words[0]
	if p.Command == "npx" || p.Command == "bunx" {
		p.Args = append(p.Args, "-y")
	}
	p.Args = append(append(append(p.Args, words[1:]...), rt...), ref)
	p.Args = append(p.Args, args...)
	spec, ok, err := packages.Parse(p.Command, p.Args)
	if !ok || err != nil {
		return nil, fmt.Errorf("%s %s: the runtime arguments %q cannot be honoured by install-once: %v", runner, ref, rt, err)
	}
	p.Spec = spec
	p.Env, err = r.keyValues("environment variable", pkg.EnvironmentVariables)
	return p, err
}

// runnerOf is the package runner of pkg: its runtimeHint when it is one
// install-once understands, else npx for npm and uvx for PyPI.
func runnerOf(pkg *Package) (string, error) {
	hints := map[string][]string{TypeNPM: {"npx", "bunx"}, TypePyPI: {"uvx", "pipx"}}[pkg.RegistryType]
	switch {
	case pkg.RuntimeHint == "":
		return hints[0], nil
	case pkg.RuntimeHint == "pipx":
		return "pipx run", nil
	case slices.Contains(hints, pkg.RuntimeHint):
		return pkg.RuntimeHint, nil
	}
	return "", fmt.Errorf("%s package %s: runtimeHint %q is not one plughost installs with (%s)", pkg.RegistryType, pkg.Identifier, pkg.RuntimeHint, strings.Join(hints, ", "))
}

// checkBase refuses a package whose registryBaseUrl is neither the
// public registry (which the user's settings may replace by a mirror)
// nor the registry the user's settings install from: plughost installs
// with those settings, and would otherwise fetch another package of the
// same name from elsewhere.
func checkBase(pkg *Package, idx Indexes) error {
	base := strings.TrimSuffix(pkg.RegistryBaseURL, "/")
	var have, def, setting string
	switch pkg.RegistryType {
	case TypeNPM:
		if idx.NPM != nil {
			have = strings.TrimSuffix(idx.NPM(pkg.Identifier), "/")
		}
		def, setting = DefaultNPM, "npm's registry setting (.npmrc registry= or @scope:registry=, or npm_config_registry)"
	case TypePyPI:
		have = strings.TrimSuffix(strings.TrimSuffix(idx.PyPI, "/"), "/simple")
		def, setting = DefaultPyPI, "PIP_INDEX_URL"
	}
	if base == "" || base == def || base == have {
		return nil // the default registry: the user's settings may name a mirror of it
	}
	if have == "" {
		have = def
	}
	return fmt.Errorf("%s package %s is on %s, but this host installs from %s: set %s to %s to install it", pkg.RegistryType, pkg.Identifier, base, have, setting, base)
}

// resolver resolves inputs into values, asking for them.
type resolver struct {
	a    Asker
	plan *Plan
}

var variableRef = regexp.MustCompile(`\{([^{}]+)\}`)

// value resolves in (named key): its value, its {variables} filled, or
// the answer asked for. secret reports whether it holds a secret.
func (r *resolver) value(key string, in Input) (v string, secret bool, err error) {
	if in.Value != "" {
		secret = in.IsSecret
		var ferr error
		v = variableRef.ReplaceAllStringFunc(in.Value, func(m string) string {
			name := m[1 : len(m)-1]
			vin, ok := in.Variables[name]
			if !ok {
				return m // not a variable: literal braces
			}
			s, sec, err := r.value(name, vin)
			secret = secret || sec
			if err != nil && ferr == nil {
				ferr = err
			}
			return s
		})
		return v, secret, ferr
	}
	v, err = r.a.Ask(ask.Question{Key: key, Description: cmp.Or(in.Description, in.Placeholder), Required: in.IsRequired,
		Secret: in.IsSecret, Default: in.Default, Choices: in.Choices})
	if err != nil {
		return "", false, err
	}
	if err := checkFormat(key, in.Format, v); err != nil {
		return "", false, err
	}
	return v, in.IsSecret, nil
}

// checkFormat checks v against an input's format.
func checkFormat(key, format, v string) error {
	if v == "" {
		return nil
	}
	switch format {
	case "number":
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return fmt.Errorf("%s: %q is not a number", key, v)
		}
	case "boolean":
		if v != "true" && v != "false" {
			return fmt.Errorf("%s: %q is not true or false", key, v)
		}
	}
	return nil
}

// maxRepeats bounds the values of a repeated argument.
const maxRepeats = 64

// args resolves arguments into command-line words: a positional one's
// value, a named one "--name=value" ("-n value" for a one-dash name, the
// name alone without a value). A repeated argument is asked for again
// (KEY, KEY#2, …) until an empty answer. A secret is refused: a command
// line is seen by every user of the machine.
func (r *resolver) args(what string, list []Argument) ([]string, error) {
	var out []string
	for i, arg := range list {
		key := cmp.Or(arg.ValueHint, strings.TrimLeft(arg.Name, "-"), fmt.Sprintf("%s %d", what, i+1))
		for n := 1; n <= maxRepeats; n++ {
			k := key
			in := arg.Input
			if n > 1 {
				k = fmt.Sprintf("%s#%d", key, n)
				in.IsRequired, in.Default = false, "" // more of them: optional
			}
			v, secret, err := r.value(k, in)
			if err != nil {
				return nil, err
			}
			if secret {
				return nil, fmt.Errorf("%s %s is a secret, and plughost never puts a secret on a command line (every user of the machine sees it): this entry cannot be installed as it is; declare it by hand with the secret in an env_files variable if the server reads one", what, key)
			}
			switch {
			case v == "": // an optional one not given
			case arg.Type == "named" && in.Format == "boolean":
				if v == "true" {
					out = append(out, arg.Name)
				}
			case arg.Type == "named" && strings.HasPrefix(arg.Name, "--"):
				out = append(out, arg.Name+"="+v)
			case arg.Type == "named":
				out = append(out, arg.Name, v)
			default:
				out = append(out, v)
			}
			if !arg.IsRepeated || v == "" || arg.Input.Value != "" {
				break
			}
		}
	}
	return out, nil
}

// keyValues resolves environment variables (or headers); an empty
// optional one is left out, a secret one named in Plan.Secrets.
func (r *resolver) keyValues(what string, list []KeyValue) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range list {
		v, secret, err := r.value(kv.Name, kv.Input)
		if err != nil {
			return nil, fmt.Errorf("%s %w", what, err)
		}
		if v == "" {
			continue
		}
		out[kv.Name] = v
		if secret {
			r.plan.Secrets = append(r.plan.Secrets, kv.Name)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// remote resolves a remote's URL and headers.
func (r *resolver) remote(t *Transport) error {
	u, secret, err := r.value("url", Input{Value: t.URL, Variables: t.Variables})
	if err != nil {
		return err
	}
	if secret {
		return fmt.Errorf("remote %s: a secret in its URL, which plughost would log and show: not installed", t.URL)
	}
	if m := variableRef.FindString(u); m != "" {
		return fmt.Errorf("remote %s: %s is not one of its variables (%s)", t.URL, m, strings.Join(slices.Sorted(maps.Keys(t.Variables)), ", "))
	}
	r.plan.URL, r.plan.Transport = u, "http"
	if t.Type == TransportSSE {
		r.plan.Transport = "sse"
	}
	r.plan.Headers, err = r.keyValues("header", t.Headers)
	return err
}
