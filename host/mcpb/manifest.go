// Package mcpb opens MCP Bundles (.mcpb files, the format Claude Desktop
// installs with a double click) so that plughost can serve them as
// declared stdio servers: a zip archive holding manifest.json and the
// server's files.
//
// A bundle is checked before anything of it is used: its manifest against
// the JSON Schema of its manifest_version, as shipped by the reference
// tool @anthropic-ai/mcpb 2.1.2 (versions 0.1 to 0.4, embedded here), its
// compatibility against this host (platform, node and python versions),
// and every entry of the archive against Limits (sizes, counts,
// compression ratio, paths that stay inside, regular files only) before
// it is written. [Unpack] writes it into a directory of its own,
// atomically; [Manifest.Launch] turns its mcp_config and the user's
// user_config values into the command that runs it.
//
// Signatures are not checked here: the caller splits the signature block
// from the archive (host/bundlesig) and hands Unpack the archive alone.
package mcpb

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ManifestName is the manifest's name at the root of a bundle.
const ManifestName = "manifest.json"

// MaxManifest is the largest manifest.json read.
const MaxManifest = 1 << 20

// Versions are the manifest versions understood: those @anthropic-ai/mcpb
// 2.1.2 validates.
var Versions = []string{"0.1", "0.2", "0.3", "0.4"}

// The server types of a manifest (Server.Type).
const (
	TypeNode   = "node"
	TypePython = "python"
	TypeBinary = "binary"
	TypeUV     = "uv" // manifest 0.4: a Python project that uv installs
)

// The user_config types (UserConfig.Type).
const (
	ConfigString    = "string"
	ConfigNumber    = "number"
	ConfigBoolean   = "boolean"
	ConfigDirectory = "directory"
	ConfigFile      = "file"
)

// Manifest is what plughost uses of a bundle's manifest.json.
type Manifest struct {
	// ManifestVersion is the version it was validated as (manifest_version,
	// or the deprecated dxt_version).
	ManifestVersion string `json:"-"`
	Name            string `json:"name"`
	DisplayName     string `json:"display_name,omitempty"`
	Version         string `json:"version"`
	Description     string `json:"description"`
	Server          Server `json:"server"`
	// Tools and Prompts are what the bundle says its server offers,
	// compared with what it lists when it runs.
	Tools         []Named                `json:"tools,omitempty"`
	Prompts       []Named                `json:"prompts,omitempty"`
	Compatibility *Compatibility         `json:"compatibility,omitempty"`
	UserConfig    map[string]*UserConfig `json:"user_config,omitempty"`
}

// Server is the manifest's server member.
type Server struct {
	Type       string    `json:"type"`
	EntryPoint string    `json:"entry_point"`
	MCPConfig  MCPConfig `json:"mcp_config"`
}

// MCPConfig is how the server is started, before its variables are
// replaced (see Manifest.Launch).
type MCPConfig struct {
	Command           string               `json:"command"`
	Args              []string             `json:"args,omitempty"`
	Env               map[string]string    `json:"env,omitempty"`
	PlatformOverrides map[string]MCPConfig `json:"platform_overrides,omitempty"`
}

// Named is a tool or prompt the manifest lists.
type Named struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Compatibility is where the bundle says it runs.
type Compatibility struct {
	// ClaudeDesktop is the Claude Desktop version range; plughost is not
	// Claude Desktop and ignores it.
	ClaudeDesktop string `json:"claude_desktop,omitempty"`
	// Platforms are Node's names: darwin, win32, linux.
	Platforms []string `json:"platforms,omitempty"`
	// Runtimes are version ranges of node and python (npm's range
	// syntax: ">=18.0.0", "^3.10", ">=3.8 <4").
	Runtimes map[string]string `json:"runtimes,omitempty"`
}

// UserConfig is one value the bundle asks its user for.
type UserConfig struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Required    bool   `json:"required,omitempty"`
	// Default is a string, number, boolean or list of strings; in a
	// string, ${HOME} and the other system directories are replaced.
	Default   any      `json:"default,omitempty"`
	Multiple  bool     `json:"multiple,omitempty"`
	Sensitive bool     `json:"sensitive,omitempty"`
	Min       *float64 `json:"min,omitempty"`
	Max       *float64 `json:"max,omitempty"`
}

//go:embed schemas/*.json
var schemaFiles embed.FS

var (
	schemasOnce sync.Once
	schemas     map[string]*jsonschema.Schema
	schemasErr  error
)

// schemaFor returns the compiled schema of manifest version v.
func schemaFor(v string) (*jsonschema.Schema, error) {
	schemasOnce.Do(func() {
		schemas = map[string]*jsonschema.Schema{}
		for _, v := range Versions {
			name := "schemas/mcpb-manifest-v" + v + ".schema.json"
			b, err := schemaFiles.ReadFile(name)
			if err != nil {
				schemasErr = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				schemasErr = fmt.Errorf("%s: %w", name, err)
				return
			}
			c := jsonschema.NewCompiler()
			c.AssertFormat() // mcpb's zod schemas check email and URL formats too
			url := "https://plughost.invalid/mcpb/" + path.Base(name)
			if err := c.AddResource(url, doc); err != nil {
				schemasErr = err
				return
			}
			if schemas[v], err = c.Compile(url); err != nil {
				schemasErr = fmt.Errorf("%s: %w", name, err)
				return
			}
		}
	})
	return schemas[v], schemasErr
}

// ParseManifest parses and checks a manifest.json: its version (the
// manifest_version member, else dxt_version), the schema of that version,
// and what the schema cannot say (an entry point and paths inside the
// bundle, defaults of the right type, min not above max).
func ParseManifest(b []byte) (*Manifest, error) {
	if len(b) > MaxManifest {
		return nil, fmt.Errorf("%s: over %d bytes", ManifestName, MaxManifest)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: not JSON: %w", ManifestName, err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: not a JSON object", ManifestName)
	}
	v := manifestVersion(obj)
	if v == "" {
		return nil, fmt.Errorf("%s: manifest_version %v is missing or not one this host knows (%s)", ManifestName, cmpOrNil(obj["manifest_version"], obj["dxt_version"]), strings.Join(Versions, ", "))
	}
	sch, err := schemaFor(v)
	if err != nil {
		return nil, err
	}
	if err := sch.Validate(doc); err != nil {
		return nil, fmt.Errorf("%s does not follow the manifest schema %s: %s", ManifestName, v, schemaError(err))
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestName, err)
	}
	m.ManifestVersion = v
	return &m, m.check()
}

// manifestVersion is the manifest's version as mcpb resolves it: a known
// manifest_version, else a known dxt_version; "" for none.
func manifestVersion(obj map[string]any) string {
	for _, k := range []string{"manifest_version", "dxt_version"} {
		if s, ok := obj[k].(string); ok && slices.Contains(Versions, s) {
			return s
		}
	}
	return ""
}

// cmpOrNil is the first non-nil of vs, for a message.
func cmpOrNil(vs ...any) any {
	for _, v := range vs {
		if v != nil {
			return fmt.Sprintf("%q", fmt.Sprint(v))
		}
	}
	return "(none)"
}

// printer renders a schema error's kind in English.
var printer = message.NewPrinter(language.English)

// schemaError is a validation error on one line: its deepest causes.
func schemaError(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			out = append(out, loc+": "+e.ErrorKind.LocalizedString(printer))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return strings.Join(out, "; ")
}

// check reports what the schema does not: the first mistake.
func (m *Manifest) check() error {
	if err := insidePath("server.entry_point", m.Server.EntryPoint); err != nil {
		return err
	}
	for k, c := range m.UserConfig {
		if k == "" || strings.ContainsAny(k, "{}$ ") {
			return fmt.Errorf("%s: user_config key %q cannot be named in ${user_config.KEY}", ManifestName, k)
		}
		if c.Min != nil && c.Max != nil && *c.Min > *c.Max {
			return fmt.Errorf("%s: user_config.%s: min %v is above max %v", ManifestName, k, *c.Min, *c.Max)
		}
		if c.Default != nil {
			if _, err := c.values(k, c.Default); err != nil {
				return fmt.Errorf("%s: user_config.%s: default: %w", ManifestName, k, err)
			}
		}
	}
	return nil
}

// insidePath checks that p, a path the manifest gives, names something
// inside the bundle: relative, without "..".
func insidePath(what, p string) error {
	clean := path.Clean(strings.ReplaceAll(p, `\`, "/"))
	if p == "" || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || hasDrive(clean) {
		return fmt.Errorf("%s: %s %q is not a path inside the bundle", ManifestName, what, p)
	}
	return nil
}

// hasDrive reports whether p starts with a Windows drive ("C:").
func hasDrive(p string) bool {
	return len(p) >= 2 && p[1] == ':' && (p[0]|0x20 >= 'a' && p[0]|0x20 <= 'z')
}

// Title is the bundle's name for a person: display_name, else name.
func (m *Manifest) Title() string {
	if m.DisplayName != "" {
		return m.DisplayName
	}
	return m.Name
}
