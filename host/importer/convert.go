package importer

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/plughost/plughost/host/declared"
)

// This file turns one server entry of a desktop host's configuration into a
// declaration (declared.Server), the notes that say what could not be
// carried over, and the sandbox grants to suggest. What a desktop host
// resolves when it starts a server (VS Code's ${input:…} prompts, ${env:…}
// and ${workspaceFolder}) plughost cannot: an env value or header holding
// one is dropped from the declaration (a literal "${input:token}" would be
// sent as the token), and an argument holding one is kept for the operator
// to edit, since dropping it would shift the others.

// The kinds of note, in the order they are printed. Only NotCarried makes
// the command's exit status 1: the others are carried over, with advice.
const (
	NotCarried = "not carried" // something the server had is lost: the operator must act
	WarnSecret = "secret"      // where a secret went
	GrantNote  = "granted"     // a grant in its plugin block, and how to narrow it
	MovedNote  = "moved"       // a path rewritten to the server's own ${HOME}
	DecideNote = "decide"      // a choice left to the operator
	InfoNote   = "note"        // how it will run
)

// Note is one line of the report on a server: its kind (NotCarried,
// WarnSecret, GrantNote, MovedNote, DecideNote, InfoNote) and its text.
type Note struct {
	Kind, Text string
}

// grants are the sandbox settings of one server's plugin block, and the
// files import writes for it besides its declaration.
type grants struct {
	runtime string   // "node", "python" or ""
	net     string   // "all" or "" (none)
	netWhy  string   // why the network is granted
	read    []string // allow_read: paths it names, secret files
	write   []string // allow_write: directories it names
	// writeDecide are the directories it names that are not granted
	// (guarded): written commented out, with why.
	writeDecide []writeDecision
	env         []string   // host variables passed through as they were (${env:X} as X)
	envDecide   []string   // env entries dropped: "NAME: why", commented out
	remote      bool       // a remote server: the host connects to it
	container   bool       // a container engine: nothing the sandbox can grant
	secrets     []secret   // secret files to write
	copies      []fileCopy // files to copy into its data directory
}

// writeDecision is a directory not granted, and why.
type writeDecision struct{ path, why string }

// secret is a secret file import writes (mode 0600).
type secret struct{ path, value string }

// entry is a server as the desktop hosts write it: the union of Claude
// Desktop's, Cursor's and VS Code's members.
type entry struct {
	Type      string            `json:"type"`
	Command   string            `json:"command"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	EnvFile   string            `json:"envFile"`
	Cwd       string            `json:"cwd"`
	URL       string            `json:"url"`
	ServerURL string            `json:"serverUrl"` // Windsurf's name for url
	Headers   map[string]string `json:"headers"`
}

// entryMembers are the members convert understands; others are reported
// as not carried.
var entryMembers = []string{"type", "command", "args", "env", "envFile", "cwd", "url", "serverUrl", "headers"}

// input is one of VS Code's "inputs": a value VS Code prompts for.
type input struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
}

// variable matches a desktop host's ${…} variable.
var variable = regexp.MustCompile(`\$\{[^}]*\}`)

// secretName matches names of env variables and headers that usually hold
// a secret.
var secretName = regexp.MustCompile(`(?i)(token|key|secret|passw|credential|auth|cookie|private|session|(^|_)pat$)`)

// converter converts the servers of one file; inputs are its VS Code inputs.
type converter struct {
	inputs   map[string]input
	stateDir string                             // plughost's state directory: secrets/, plugins/NAME/data
	home     string                             // the user's home directory ("" unknown)
	own      []string                           // plughost's own directories, never granted (guarded)
	stat     func(string) (isDir bool, ok bool) // os.Stat, replaceable in tests
	head     func(string) string                // the first line of a file, for its #!
	secrets  []string                           // env variables and headers known to be secret (Options.Secrets)
}

// isSecret reports whether the env variable or header k holds a secret:
// the caller says so (Options.Secrets), or its name does (secretName).
func (c *converter) isSecret(k string) bool {
	return slices.Contains(c.secrets, k) || secretName.MatchString(k)
}

// convert returns the declaration of the server called name (a provider
// name) whose entry is raw, what the report says about it and the grants
// to suggest; an error when it cannot be declared at all.
func (c *converter) convert(name string, raw json.RawMessage) (*declared.Server, []Note, grants, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, nil, grants{}, fmt.Errorf("not a JSON object")
	}
	var e entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, nil, grants{}, fmt.Errorf("cannot read it: %v", err)
	}
	var notes []Note
	add := func(kind, format string, args ...any) {
		notes = append(notes, Note{kind, fmt.Sprintf(format, args...)})
	}
	for _, k := range slices.Sorted(maps.Keys(members)) {
		if !slices.Contains(entryMembers, k) {
			add(NotCarried, "%q: %s (plughost has no such setting)", k, members[k])
		}
	}
	if e.URL == "" {
		e.URL = e.ServerURL
	}
	s := &declared.Server{Command: e.Command, Args: e.Args, URL: e.URL}
	var g grants
	switch e.Type {
	case "", "stdio", "local":
	case "http", "streamable-http", "streamableHttp":
	case "sse":
		s.Type = declared.TypeSSE
	default:
		return nil, nil, g, fmt.Errorf("type %q: unknown transport (want stdio, http or sse)", e.Type)
	}
	if e.URL != "" {
		if v := variable.FindString(e.URL); v != "" {
			return nil, nil, g, fmt.Errorf("url %q: %s cannot be resolved here", e.URL, c.describe(v))
		}
		g.remote = true
		c.headers(name, s, e.Headers, &g, add)
		return s, notes, g, nil
	}
	if e.Command == "" {
		return nil, nil, g, fmt.Errorf(`neither "command" nor "url"`)
	}
	if v := variable.FindString(e.Command); v != "" {
		add(NotCarried, "command %q: %s cannot be resolved here; edit %s%s", e.Command, c.describe(v), name, declared.Suffix)
	}
	for i, a := range e.Args {
		if v := slices.DeleteFunc(variable.FindAllString(a, -1), ownVariable); len(v) > 0 {
			add(NotCarried, "args[%d] %q: %s cannot be resolved here; edit %s%s", i, a, c.describe(v[0]), name, declared.Suffix)
		}
	}
	switch {
	case e.Cwd == "":
	case variable.MatchString(e.Cwd) || !filepath.IsAbs(e.Cwd):
		add(NotCarried, "cwd %q: not an absolute path here; the server starts in its data directory", e.Cwd)
	default:
		s.Cwd = e.Cwd
	}
	if e.EnvFile != "" {
		add(NotCarried, "envFile %q: its variables are not read; put the ones the server needs in the declaration's env or in plughost's environment (and the sandbox's env list)", e.EnvFile)
	}
	c.env(name, s, e.Env, &g, add)
	c.command(name, s, &g, add)
	sort.SliceStable(notes, func(i, j int) bool { return noteRank(notes[i].Kind) < noteRank(notes[j].Kind) })
	return s, notes, g, nil
}

// env carries the literal env values into s and turns the others into
// pass-through grants. A literal secret (by its variable's name, see
// secretName: one line, not a path) goes to a file, mode 0600, under
// plughost's state directory (secrets/NAME/), named in env_files and
// granted with allow_read, as a remote server's secret headers do; a
// secret of several lines (a PEM key) stays in the declaration, said.
func (c *converter) env(name string, s *declared.Server, env map[string]string, g *grants, add func(string, string, ...any)) {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		vars := slices.DeleteFunc(variable.FindAllString(v, -1), ownVariable)
		switch {
		case len(vars) == 0:
			if strings.Contains(v, "${") {
				add(InfoNote, "env %s = %q: in plughost, ${HOME} is the server's private data directory (kept across restarts) and ${TMPDIR} its tmp directory", k, v)
			}
			if c.isSecret(k) && strings.TrimSpace(v) != "" && !strings.ContainsAny(v, "\r\n\x00") &&
				!strings.Contains(v, "${") && !filepath.IsAbs(v) {
				if s.EnvFiles == nil {
					s.EnvFiles = map[string]string{}
				}
				path := filepath.Join(c.stateDir, "secrets", name, fileName(k))
				s.EnvFiles[k] = path
				g.secrets = append(g.secrets, secret{path, strings.TrimSpace(v)})
				g.read = append(g.read, path)
				add(WarnSecret, "env %s: its value is now in %s (mode 0600), named in the declaration's env_files, granted with allow_read", k, path)
				continue
			}
			if s.Env == nil {
				s.Env = map[string]string{}
			}
			s.Env[k] = v
			if v != "" && secretName.MatchString(k) && !filepath.IsAbs(v) {
				add(WarnSecret, "env %s holds a secret, now in the declaration (written mode 0600, which plughost reads only to start the server); or set %s in plughost's environment and pass it through with its plugin block's env = [%q]", k, k, k)
			}
		case v == "${env:"+k+"}":
			g.env = append(g.env, k)
			add(InfoNote, "env %s = %s: passed through from plughost's own environment (its plugin block's env lists it); set %s there", k, v, k)
		default:
			g.envDecide = append(g.envDecide, fmt.Sprintf("%s: was %s", k, v))
			add(NotCarried, "env %s = %q: %s cannot be resolved here; set %s in plughost's environment and pass it through (commented out in its plugin block), or write the value into the declaration's env yourself", k, v, c.describe(vars[0]), k)
		}
	}
}

// headers carries a remote server's headers into s. "Authorization: Bearer
// ${env:X}" becomes bearer_token_env X. A literal secret does not stay in
// the declaration: a bearer token goes to a file named by
// bearer_token_file, another secret header (by its name, see secretName,
// or an Authorization of another scheme) to a file named in header_files;
// each file is written mode 0600 under plughost's state directory
// (secrets/NAME/) and granted to the server with allow_read, which the
// host checks before it reads the file.
func (c *converter) headers(name string, s *declared.Server, h map[string]string, g *grants, add func(string, string, ...any)) {
	dir := filepath.Join(c.stateDir, "secrets", name)
	for _, k := range slices.Sorted(maps.Keys(h)) {
		v := h[k]
		token, bearer := strings.CutPrefix(v, "Bearer ")
		bearer = bearer && strings.EqualFold(k, "Authorization")
		vars := variable.FindAllString(v, -1)
		switch {
		case bearer && len(vars) == 1 && token == vars[0] && strings.HasPrefix(token, "${env:"):
			s.BearerTokenEnv = strings.TrimSuffix(strings.TrimPrefix(token, "${env:"), "}")
			g.env = append(g.env, s.BearerTokenEnv) // the operator's grant of the token's source: the block's env
			add(InfoNote, "headers %s = %q: carried as bearer_token_env %q (plughost reads it from its own environment; its plugin block's env grants it)", k, v, s.BearerTokenEnv)
		case len(vars) > 0:
			add(NotCarried, "headers %s = %q: %s cannot be resolved here; for a bearer token declare bearer_token_file (a file only plughost reads) or bearer_token_env", k, v, c.describe(vars[0]))
		case bearer && strings.TrimSpace(token) != "":
			s.BearerTokenFile = filepath.Join(dir, "bearer_token")
			g.secrets = append(g.secrets, secret{s.BearerTokenFile, strings.TrimSpace(token)})
			g.read = append(g.read, s.BearerTokenFile)
			add(WarnSecret, "headers %s: its bearer token is now in %s (mode 0600), the declaration's bearer_token_file, granted with allow_read", k, s.BearerTokenFile)
		case strings.EqualFold(k, "Authorization") || c.isSecret(k):
			if s.HeaderFiles == nil {
				s.HeaderFiles = map[string]string{}
			}
			path := filepath.Join(dir, fileName(k))
			s.HeaderFiles[k] = path
			g.secrets = append(g.secrets, secret{path, v})
			g.read = append(g.read, path)
			add(WarnSecret, "headers %s: its value is now in %s (mode 0600), named in the declaration's header_files, granted with allow_read", k, path)
		default:
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			s.Headers[k] = v
		}
	}
}

// fileName is a header's name made a file name: lower case, anything but
// [a-z0-9_-] an underscore.
func fileName(header string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, strings.ToLower(header))
}

// ownVariable reports whether v is one plughost itself expands in a
// declaration (${HOME}, ${TMPDIR}: the server's data and tmp directories).
func ownVariable(v string) bool { return v == "${HOME}" || v == "${TMPDIR}" }

// describe says what a ${…} variable is.
func (c *converter) describe(v string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(v, "${"), "}")
	switch {
	case strings.HasPrefix(inner, "input:"):
		in, ok := c.inputs[strings.TrimPrefix(inner, "input:")]
		what := "a value VS Code prompts for"
		if ok && in.Password {
			what = "a secret VS Code prompts for"
		}
		if ok && in.Description != "" {
			what += fmt.Sprintf(" (%q)", in.Description)
		}
		return v + ", " + what + ","
	case strings.HasPrefix(inner, "env:"):
		return v + ", the desktop host's environment,"
	}
	return v + ", the desktop host's variable,"
}

func noteRank(kind string) int {
	return slices.Index([]string{NotCarried, WarnSecret, GrantNote, MovedNote, DecideNote, InfoNote}, kind)
}
