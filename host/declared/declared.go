// Package declared reads the declaration of an MCP server that plughost
// serves as a plugin although it is not one: a stdio program (any MCP
// server written with any SDK, in any language) or a remote Streamable HTTP
// endpoint.
//
// A declaration is a small JSON file in the plugin directory, named
// NAME.mcp.json (NAME becomes the provider's name, as a plugin's file name
// does). Its shape is one entry of the "mcpServers" map that Claude
// Desktop, Cursor and VS Code use, so a server's README snippet can be
// pasted as it is:
//
//	{"command": "node", "args": ["/opt/mcp/server.js"], "env": {"LEVEL": "info"}}
//	{"url": "https://mcp.example.com/mcp", "bearer_token_file": "/run/secrets/example"}
//	{"url": "https://mcp.example.com/mcp", "header_files": {"X-API-Key": "/run/secrets/example-key"}}
//	{"url": "https://mcp.example.com/mcp", "oauth": {}}
//
// The last is a remote server that is an OAuth resource server: plughost
// logs in to it once (`plughost login NAME`) or uses client credentials;
// see [OAuth].
//
// What the server may touch is not decided here but in the configuration
// file's sandbox block for NAME, as for any plugin: a declaration dropped
// into the directory cannot grant itself anything. It may say what the
// server needs, so that the operator sees it next to what is granted
// (`plughost plugins`):
//
//	{"command": "npx", "args": ["-y", "@acme/notes-mcp"],
//	 "requests": {"read": ["/srv/notes"], "net": ["api.acme.com:443"], "env": ["ACME_TOKEN"]}}
//
// read and write are absolute paths, net "host:port" destinations (or
// "*": anywhere), env names of the host's environment variables.
package declared

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/agext/levenshtein"

	"github.com/plughost/plughost/pluginproto"
)

// Suffix ends the file name of every declaration in the plugin directory.
const Suffix = ".mcp.json"

// MaxSize is the largest declaration file read.
const MaxSize = 64 << 10

// The transports of a declared server (Server.Type).
const (
	TypeStdio = "stdio" // a program the host starts, speaking MCP on stdin/stdout
	TypeHTTP  = "http"  // a remote Streamable HTTP endpoint
	TypeSSE   = "sse"   // a remote endpoint of the HTTP+SSE transport of MCP 2024-11-05
)

// Server is one declared MCP server.
type Server struct {
	// Type is TypeStdio, TypeHTTP or TypeSSE; Parse derives it when
	// absent (a command is stdio, a url is http).
	Type string `json:"type,omitempty"`

	// Command is the program of a stdio server: an absolute path, or a
	// name looked up in the sandbox's PATH (/usr/local/bin:/usr/bin:/bin)
	// or in Env's PATH when it sets one.
	Command string `json:"command,omitempty"`
	// Args are its arguments. In Args, Env's values and Cwd, ${HOME}
	// stands for the server's private data directory (kept across
	// restarts) and ${TMPDIR} for its tmp directory; nothing else is
	// expanded.
	Args []string `json:"args,omitempty"`
	// Env adds to the environment the sandbox gives it (HOME is its data
	// directory, TMPDIR its tmp directory, PATH the sandbox's).
	Env map[string]string `json:"env,omitempty"`
	// EnvFiles add variables whose values are secrets kept in files
	// (variable → absolute path), read by the host when it starts the
	// server, as HeaderFiles are for a remote one.
	EnvFiles map[string]string `json:"env_files,omitempty"`
	// Cwd is its working directory; empty means its data directory.
	Cwd string `json:"cwd,omitempty"`

	// URL is the endpoint of a remote server.
	URL string `json:"url,omitempty"`
	// Headers are sent with every request to it.
	Headers map[string]string `json:"headers,omitempty"`
	// HeaderFiles are headers sent with every request whose values are
	// secrets kept in files (header name → absolute path): an API key, a
	// cookie. A file is read by the host when it starts the server, must
	// be its owner's alone (chmod 600) and loses its trailing white space;
	// the operator grants it with allow_read, as bearer_token_file.
	HeaderFiles map[string]string `json:"header_files,omitempty"`
	// BearerTokenFile names a file holding the token sent as
	// "Authorization: Bearer …" (trailing white space removed), read by
	// the host when it starts the server.
	BearerTokenFile string `json:"bearer_token_file,omitempty"`
	// BearerTokenEnv names a variable of the host's environment holding
	// that token instead.
	BearerTokenEnv string `json:"bearer_token_env,omitempty"`
	// OAuth makes plughost an OAuth client of the server instead (see
	// OAuth); nil for none.
	OAuth *OAuth `json:"oauth,omitempty"`

	// Requests is what the server asks the operator to grant it; it
	// grants nothing (see the package documentation).
	Requests pluginproto.Requests `json:"requests,omitzero"`

	// Bundle makes the server an MCP Bundle's (a .mcpb file): its path,
	// absolute or relative to the plugin directory. Its manifest says
	// the command; the declaration gives the values of its user_config
	// (UserConfig, UserConfigFiles) and may pin the file (BundleSHA256).
	// A .mcpb file in the plugin directory is such a declaration itself,
	// with its defaults only (see Load). A bundle declaration has no
	// command, args, env, env_files or cwd of its own.
	Bundle string `json:"bundle,omitempty"`
	// BundleSHA256 is the SHA-256 (hex) the bundle file must have: what
	// `plughost install` saw and the operator approved; another file is
	// refused. Empty: any file at Bundle.
	BundleSHA256 string `json:"bundle_sha256,omitempty"`
	// UserConfig are values of the bundle's user_config that are no
	// secret: a string, number, boolean, or list of strings for a
	// "multiple" one (directories and files are granted in the
	// operator's configuration, not here).
	UserConfig map[string]any `json:"user_config,omitempty"`
	// UserConfigFiles are its sensitive values, each kept in a file
	// (key → absolute path, mode 0600), read by the host at each start
	// as env_files are.
	UserConfigFiles map[string]string `json:"user_config_files,omitempty"`

	// Origin says where `plughost install` found the server, for
	// `plughost upgrade` and `plughost uninstall`; nil for a declaration
	// written by hand. It grants nothing and changes nothing of how the
	// server runs.
	Origin *Origin `json:"origin,omitempty"`
}

// Origin is where an installed server came from.
type Origin struct {
	// Registry is the MCP Registry's URL, or the file or directory of
	// server.json documents, it was resolved through; "" for a bundle
	// installed from a file.
	Registry string `json:"registry,omitempty"`
	// Name and Version are the server's in the registry
	// ("io.github.acme/notes", "1.2.3"), or the bundle manifest's.
	Name    string `json:"name"`
	Version string `json:"version"`
	// Type is what was installed: a package's registryType ("npm",
	// "pypi", "mcpb") or a remote's transport ("streamable-http", "sse").
	Type string `json:"type"`
}

// fields are the members a declaration may have, for the "did you mean"
// of an unknown one.
var fields = []string{"type", "command", "args", "env", "env_files", "cwd", "url", "headers", "header_files", "bearer_token_file", "bearer_token_env", "oauth", "requests", "origin", "bundle", "bundle_sha256", "user_config", "user_config_files"}

// BundleSuffix ends the file name of an MCP Bundle in the plugin
// directory: it is served as the declaration {"bundle": PATH}.
const BundleSuffix = ".mcpb"

// Load reads and parses the declaration at path; a bundle file
// (BundleSuffix) is the declaration naming it, unread here.
func Load(path string) (*Server, error) {
	if strings.HasSuffix(path, BundleSuffix) {
		return &Server{Type: TypeStdio, Bundle: path}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSize {
		return nil, fmt.Errorf("%s: over %d bytes: not a declaration", path, MaxSize)
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Parse parses and checks a declaration. Unknown members are refused,
// with the member meant when it is a near miss.
func Parse(b []byte) (*Server, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	for k := range raw {
		if !slices.Contains(fields, k) {
			return nil, fmt.Errorf("unknown member %q%s (a declaration has: %s)", k, nearest(k, fields), strings.Join(fields, ", "))
		}
	}
	if o, ok := raw["oauth"]; ok {
		if err := checkOAuthMembers(o); err != nil {
			return nil, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Server
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	return &s, s.check()
}

// check fills Type and reports the first mistake.
func (s *Server) check() error {
	remote := s.URL != "" || len(s.Headers) > 0 || len(s.HeaderFiles) > 0 || s.BearerTokenFile != "" || s.BearerTokenEnv != "" || s.OAuth != nil
	local := s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 || len(s.EnvFiles) > 0 || s.Cwd != ""
	if s.Bundle != "" {
		return s.checkBundle(local || remote)
	}
	if s.BundleSHA256 != "" || len(s.UserConfig) > 0 || len(s.UserConfigFiles) > 0 {
		return errors.New(`"bundle_sha256", "user_config" and "user_config_files" are a bundle's: this declaration has no "bundle"`)
	}
	switch {
	case s.Type == "" && s.Command != "":
		s.Type = TypeStdio
	case s.Type == "" && s.URL != "":
		s.Type = TypeHTTP
	case s.Type == "streamable-http" || s.Type == "streamableHttp":
		s.Type = TypeHTTP
	}
	switch s.Type {
	case TypeStdio:
		if s.Command == "" {
			return errors.New(`a stdio server needs "command"`)
		}
		if remote {
			return errors.New(`a stdio server has no "url", "headers", bearer token or "oauth": those are a remote server's`)
		}
		for k := range s.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return fmt.Errorf("env: %q is not a variable name", k)
			}
		}
		for k, path := range s.EnvFiles {
			switch _, dup := s.Env[k]; {
			case k == "" || strings.ContainsAny(k, "=\x00"):
				return fmt.Errorf("env_files: %q is not a variable name", k)
			case dup:
				return fmt.Errorf("env and env_files both give %s: give one", k)
			case !strings.HasPrefix(path, "/"):
				return fmt.Errorf("env_files: %s: %q is not an absolute path", k, path)
			}
		}
		if s.Cwd != "" && !strings.HasPrefix(s.Cwd, "/") && !ownDir(s.Cwd) {
			return fmt.Errorf("cwd: %q is not an absolute path", s.Cwd)
		}
	case TypeHTTP, TypeSSE:
		if local {
			return errors.New(`a remote server has no "command", "args", "env", "env_files" or "cwd": those are a stdio server's`)
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url: %q is not an http:// or https:// URL", s.URL)
		}
		if s.BearerTokenFile != "" && s.BearerTokenEnv != "" {
			return errors.New("bearer_token_file and bearer_token_env: give one")
		}
		bearer := s.BearerTokenFile != "" || s.BearerTokenEnv != ""
		if bearer && s.OAuth != nil {
			return errors.New(`a bearer token and "oauth": give one (oauth gets the tokens itself)`)
		}
		for k := range s.Headers {
			if strings.EqualFold(k, "Authorization") && (bearer || s.OAuth != nil) {
				return errors.New(`headers: "Authorization" and a bearer token or "oauth": give one`)
			}
		}
		for k, path := range s.HeaderFiles {
			switch {
			case strings.EqualFold(k, "Authorization") && (bearer || s.OAuth != nil):
				return errors.New(`header_files: "Authorization" and a bearer token or "oauth": give one`)
			case slices.ContainsFunc(slices.Collect(maps.Keys(s.Headers)), func(h string) bool { return strings.EqualFold(h, k) }):
				return fmt.Errorf("headers and header_files both give %q: give one", k)
			case k == "" || strings.ContainsAny(k, " :\r\n\x00"):
				return fmt.Errorf("header_files: %q is not a header name", k)
			case !strings.HasPrefix(path, "/"):
				return fmt.Errorf("header_files: %s: %q is not an absolute path", k, path)
			}
		}
		if s.OAuth != nil {
			if err := s.OAuth.check(); err != nil {
				return err
			}
		}
	case "":
		return errors.New(`neither "command" (a stdio server) nor "url" (a remote one)`)
	default:
		return fmt.Errorf("type: unknown transport %q (want %q, %q or %q)", s.Type, TypeStdio, TypeHTTP, TypeSSE)
	}
	return checkRequests(s.Requests)
}

// checkBundle checks a bundle's declaration; other is whether it has
// members of a stdio or remote server besides.
func (s *Server) checkBundle(other bool) error {
	switch {
	case other:
		return errors.New(`a "bundle" has no "command", "args", "env", "env_files", "cwd" nor a remote server's members: its manifest says how it runs`)
	case s.Type != "" && s.Type != TypeStdio:
		return fmt.Errorf("type: a bundle's server is %q, not %q", TypeStdio, s.Type)
	case !strings.HasSuffix(s.Bundle, BundleSuffix):
		return fmt.Errorf("bundle: %q is not a %s file", s.Bundle, BundleSuffix)
	case s.BundleSHA256 != "" && (len(s.BundleSHA256) != 64 || strings.Trim(s.BundleSHA256, "0123456789abcdef") != ""):
		return fmt.Errorf("bundle_sha256: %q is not a SHA-256 in lower-case hex", s.BundleSHA256)
	}
	s.Type = TypeStdio
	for k, v := range s.UserConfig {
		if !configValue(v) {
			return fmt.Errorf("user_config: %s: a value is a string, number, boolean or list of strings", k)
		}
		if _, dup := s.UserConfigFiles[k]; dup {
			return fmt.Errorf("user_config and user_config_files both give %s: give one", k)
		}
	}
	for k, path := range s.UserConfigFiles {
		if !strings.HasPrefix(path, "/") {
			return fmt.Errorf("user_config_files: %s: %q is not an absolute path", k, path)
		}
	}
	return checkRequests(s.Requests)
}

// configValue reports whether v, decoded from JSON, is a user_config
// value.
func configValue(v any) bool {
	switch v := v.(type) {
	case string, float64, bool:
		return true
	case []any:
		for _, it := range v {
			if _, ok := it.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// UserConfigValues returns UserConfig, with the value of each of
// UserConfigFiles read from its file as EnvValues reads a variable's.
func (s *Server) UserConfigValues() (map[string]any, error) {
	out := maps.Clone(s.UserConfig)
	if out == nil {
		out = map[string]any{}
	}
	for _, k := range slices.Sorted(maps.Keys(s.UserConfigFiles)) {
		v, err := readSecret(s.UserConfigFiles[k])
		if err != nil {
			return nil, fmt.Errorf("user_config_files: %s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// checkRequests reports the first malformed entry of a requests member.
func checkRequests(r pluginproto.Requests) error {
	for _, p := range slices.Concat(r.Read, r.Write) {
		if !strings.HasPrefix(p, "/") {
			return fmt.Errorf("requests: %q is not an absolute path", p)
		}
	}
	for _, n := range r.Net {
		if _, port, err := net.SplitHostPort(n); n != "*" && (err != nil || port == "") {
			return fmt.Errorf(`requests: net %q is not "host:port" or "*"`, n)
		}
	}
	for _, e := range r.Env {
		if e == "" || strings.ContainsAny(e, "=\x00") {
			return fmt.Errorf("requests: env %q is not a variable name", e)
		}
	}
	return nil
}

// ownDir reports whether path starts with the server's own directory,
// ${HOME} or ${TMPDIR}, as a whole path element.
func ownDir(path string) bool {
	for _, v := range []string{"${HOME}", "${TMPDIR}"} {
		if rest, ok := strings.CutPrefix(path, v); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return false
}

// Remote reports whether s is a remote server.
func (s *Server) Remote() bool { return s.Type == TypeHTTP || s.Type == TypeSSE }

// Token returns the bearer token of a remote server, read from its file or
// from getenv; "" when it declares none.
func (s *Server) Token(getenv func(string) string) (string, error) {
	switch {
	case s.BearerTokenFile != "":
		b, err := os.ReadFile(s.BearerTokenFile)
		if err != nil {
			return "", fmt.Errorf("bearer_token_file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("bearer_token_file: %s is empty", s.BearerTokenFile)
		}
		return t, nil
	case s.BearerTokenEnv != "":
		t := getenv(s.BearerTokenEnv)
		if t == "" {
			return "", fmt.Errorf("bearer_token_env: $%s is empty or unset", s.BearerTokenEnv)
		}
		return t, nil
	}
	return "", nil
}

// HeaderValues returns the headers to send: Headers, and the value of
// each of HeaderFiles read from its file (trailing white space removed).
// A file open to group or others, empty or over MaxSize is refused;
// errors name the header and the file, never a value.
func (s *Server) HeaderValues() (map[string]string, error) {
	if len(s.HeaderFiles) == 0 {
		return s.Headers, nil
	}
	out := maps.Clone(s.Headers)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(s.HeaderFiles)) {
		v, err := readSecret(s.HeaderFiles[k])
		if err != nil {
			return nil, fmt.Errorf("header_files: %s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// EnvValues returns the variables to add to a stdio server's environment:
// Env, and the value of each of EnvFiles read from its file, as
// HeaderValues reads a header's.
func (s *Server) EnvValues() (map[string]string, error) {
	if len(s.EnvFiles) == 0 {
		return s.Env, nil
	}
	out := maps.Clone(s.Env)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(s.EnvFiles)) {
		v, err := readSecret(s.EnvFiles[k])
		if err != nil {
			return nil, fmt.Errorf("env_files: %s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// readSecret reads the secret in the file at path.
func readSecret(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat() // of the file opened, not of a name that may change meanwhile
	if err != nil {
		return "", err
	}
	if perm := st.Mode().Perm(); !st.Mode().IsRegular() || perm&0o077 != 0 {
		return "", fmt.Errorf("%s must be a regular file its owner's alone (mode %04o): chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return "", err
	}
	v := strings.TrimRight(string(b), " \t\r\n")
	switch {
	case len(b) > MaxSize:
		return "", fmt.Errorf("%s is over %d bytes: not a header value", path, MaxSize)
	case v == "" || strings.ContainsAny(v, "\r\n\x00"):
		return "", fmt.Errorf("%s is empty or holds more than one line", path)
	}
	return v, nil
}

// EnvList returns Env as NAME=value entries, sorted.
func (s *Server) EnvList() []string {
	out := make([]string, 0, len(s.Env))
	for k, v := range s.Env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Name returns the provider name part of a declaration's file name
// (everything before Suffix), or of a bundle's (before BundleSuffix),
// and whether base is one of them.
func Name(base string) (string, bool) {
	name, ok := strings.CutSuffix(base, Suffix)
	if !ok {
		name, ok = strings.CutSuffix(base, BundleSuffix)
	}
	return name, ok && name != ""
}

// nearest suggests the member of fields nearest to k (by edit distance,
// at most 2).
func nearest(k string, fields []string) string {
	best, dist := "", 3
	for _, f := range fields {
		if d := levenshtein.Distance(strings.ToLower(k), f, nil); d < dist {
			best, dist = f, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
