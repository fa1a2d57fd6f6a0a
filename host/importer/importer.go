// Package importer carries the MCP servers of a desktop host's
// configuration over to plughost: Claude Desktop's
// claude_desktop_config.json, Cursor's mcp.json, VS Code's .vscode/mcp.json
// or settings.json. Each server becomes a declaration, NAME.mcp.json
// (package declared), in the plugin directory, and the sandbox grants it
// needs become a plugin block of the configuration file. What cannot be
// carried over, and what the operator must decide, is said per server in
// notes.
//
// The format is told by the file's shape, not its name: "mcpServers"
// (Claude Desktop, Cursor, Windsurf), "servers" (VS Code's mcp.json) or
// "mcp": {"servers"} (VS Code's settings.json). Every file is read as JSON
// with comments and trailing commas (JWCC, which VS Code writes), by
// github.com/tailscale/hujson.
//
// A use, as `plughost import` does it:
//
//	f, err := importer.Read(src)
//	rep := importer.Import(f, &importer.Options{PluginDir: dir})
//	for _, s := range rep.Servers { … print s.Status, s.Notes … }
//	fmt.Print(importer.Snippet(rep.Servers))
package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/tailscale/hujson"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/naming"
)

// File is a desktop host's configuration, read.
type File struct {
	// Format describes the format told by the file's shape.
	Format string
	// Servers are its server entries by their name in the file.
	Servers map[string]json.RawMessage

	inputs map[string]input // VS Code's inputs, by id
}

// Read tells the format of a desktop host's file by its shape and returns
// its servers.
func Read(src []byte) (*File, error) {
	std, err := hujson.Standardize(src)
	if err != nil {
		return nil, fmt.Errorf("not JSON (comments and trailing commas allowed): %w", err)
	}
	var top struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
		Servers    map[string]json.RawMessage `json:"servers"`
		Inputs     []input                    `json:"inputs"`
		MCP        *struct {
			Servers map[string]json.RawMessage `json:"servers"`
			Inputs  []input                    `json:"inputs"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(std, &top); err != nil {
		return nil, fmt.Errorf("not an MCP configuration: %w", err)
	}
	f := &File{inputs: map[string]input{}}
	var inputs []input
	switch {
	case top.MCPServers != nil:
		f.Format, f.Servers = `"mcpServers" (Claude Desktop or Cursor)`, top.MCPServers
	case top.Servers != nil:
		f.Format, f.Servers, inputs = `"servers" (VS Code's mcp.json)`, top.Servers, top.Inputs
	case top.MCP != nil && top.MCP.Servers != nil:
		f.Format, f.Servers, inputs = `"mcp": {"servers"} (VS Code's settings.json)`, top.MCP.Servers, top.MCP.Inputs
	default:
		return nil, errors.New(`no "mcpServers", "servers" or "mcp": {"servers"} object: not a Claude Desktop, Cursor or VS Code MCP configuration`)
	}
	for _, in := range inputs {
		f.inputs[in.ID] = in
	}
	return f, nil
}

// Options configure Import. A nil *Options is not allowed: PluginDir is
// needed.
type Options struct {
	// PluginDir is the directory the declarations are written into.
	PluginDir string
	// Force overwrites existing declarations.
	Force bool
	// DryRun writes nothing; Server.Status says what would be written.
	DryRun bool
	// StateDir is plughost's state directory ($XDG_STATE_HOME/plughost):
	// the secrets taken out of declarations are written under
	// StateDir/secrets/NAME/, and the files a server writes are copied
	// into its data directory, StateDir/plugins/NAME/data (its ${HOME}).
	// It must be absolute, and serve's (plughost's stateDir), or the
	// servers will not find what was copied for them.
	StateDir string
	// Home is the user's home directory ("" means os.UserHomeDir), and
	// Own plughost's own directories besides StateDir and PluginDir (its
	// configuration directory, its cache): a server naming a directory
	// that is /, Home itself, or holds or lies in one of them or in a
	// directory of keys (~/.ssh, …) is granted nothing automatically.
	Home string
	Own  []string
	// Secrets are names of env variables and headers whose values are
	// secrets whatever their names say (a registry entry's isSecret):
	// each goes to a file, as a secret-looking name's does.
	Secrets []string
	// Amend, when set, completes each declaration before it is written
	// (plughost install adds its origin, an oauth member).
	Amend func(s *declared.Server)

	// stat and head replace os.Stat and the reading of a file's first
	// line in tests; nil means the real ones.
	stat func(string) (isDir, ok bool)
	head func(string) string
}

// Report is what Import did.
type Report struct {
	// Servers are the servers of the file in the order of their names,
	// skipped ones included (Server.Skipped).
	Servers []Server
}

// Server is one server of the file, imported or skipped.
type Server struct {
	Source string // its name in the desktop host's file
	Name   string // its provider name ("" when skipped before one was given)
	// Skipped says why it was not written; nil when it was.
	Skipped error
	// Status is what was done: "wrote FILE" ("would write FILE" in a dry
	// run).
	Status string
	// Notes say what was not carried over and what to decide, most
	// serious first.
	Notes []Note
	// Content is the declaration written.
	Content []byte

	grants grants
}

// Full reports whether everything of the server was carried over: it was
// not skipped and no note is of kind NotCarried.
func (s *Server) Full() bool {
	return s.Skipped == nil && !slices.ContainsFunc(s.Notes, func(n Note) bool { return n.Kind == NotCarried })
}

// Import converts and writes the declaration of every server of f into
// opts.PluginDir. A server whose provider name (its name in the file made
// one, see naming.ForFile) another already has is skipped, as is one that
// cannot be declared or whose file exists (unless opts.Force).
func Import(f *File, opts *Options) *Report {
	c := &converter{inputs: f.inputs, stateDir: opts.StateDir, home: opts.Home, stat: opts.stat, head: opts.head, secrets: opts.Secrets}
	if c.home == "" {
		c.home, _ = os.UserHomeDir()
	}
	c.own = ownDirs(c.home, append([]string{opts.StateDir, opts.PluginDir}, opts.Own...))
	if c.stat == nil {
		c.stat = statPath
	}
	if c.head == nil {
		c.head = firstLineOf
	}
	rep := &Report{}
	taken := map[string]string{} // provider name → the source name that has it
	for _, source := range slices.Sorted(maps.Keys(f.Servers)) {
		s := Server{Source: source}
		s.Name, _ = naming.ForFile(source + ".x") // the whole name, dots included, sanitized
		if other, dup := taken[s.Name]; dup {
			s.Skipped = fmt.Errorf("its provider name %q is %q's already", s.Name, other)
			rep.Servers = append(rep.Servers, s)
			continue
		}
		taken[s.Name] = source
		d, notes, g, err := c.convert(s.Name, f.Servers[source])
		s.Notes, s.grants = notes, g
		if err == nil && opts.Amend != nil {
			opts.Amend(d)
		}
		if err == nil {
			err = writeDeclaration(filepath.Join(opts.PluginDir, s.Name+declared.Suffix), d, opts, &s)
		}
		s.Skipped = err
		rep.Servers = append(rep.Servers, s)
	}
	return rep
}

// writeDeclaration writes d to path, mode 0600 (env values may hold
// secrets), after checking that it parses as a declaration; not over an
// existing file unless opts.Force; nothing in a dry run. Before it, it
// writes the server's secret files and copies the files it moved into its
// data directory.
func writeDeclaration(path string, d *declared.Server, opts *Options, s *Server) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return err
	}
	if _, err := declared.Parse(b.Bytes()); err != nil {
		return fmt.Errorf("the declaration would not parse: %v", err)
	}
	s.Content = b.Bytes()
	if _, err := os.Lstat(path); err == nil && !opts.Force {
		return fmt.Errorf("%s exists (--force overwrites it)", path)
	}
	if opts.DryRun {
		s.Status = "would write " + path
		return nil
	}
	for _, sec := range s.grants.secrets {
		if err := writeSecret(sec.path, sec.value); err != nil {
			return fmt.Errorf("secret file: %w", err)
		}
	}
	for _, cp := range s.grants.copies {
		copied, err := copyNew(cp.from, cp.to)
		switch {
		case err != nil:
			return fmt.Errorf("copying %s into its data directory: %w", cp.from, err)
		case !copied:
			s.Notes = append(s.Notes, Note{InfoNote, fmt.Sprintf("%s exists already: kept (%s not copied over it)", cp.to, cp.from)})
		}
	}
	if err := WriteNew(path, s.Content, 0o600, opts.Force); err != nil {
		return err
	}
	s.Status = "wrote " + path
	return nil
}

// ownDirs returns plughost's own directories: those given, and under home
// the default ones ($XDG_*_HOME unset), cleaned, empty ones left out.
func ownDirs(home string, given []string) []string {
	var own []string
	if home != "" {
		for _, d := range []string{".config/plughost", ".local/state/plughost", ".local/share/plughost", ".cache/plughost"} {
			given = append(given, filepath.Join(home, d))
		}
	}
	for _, d := range given {
		if filepath.IsAbs(d) && !slices.Contains(own, filepath.Clean(d)) {
			own = append(own, filepath.Clean(d))
		}
	}
	return own
}
