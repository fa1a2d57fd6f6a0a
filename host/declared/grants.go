package declared

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/plughost/plughost/sandbox"
)

// A declaration is a file anyone who may write the plugin directory can
// drop, so a secret it names (a token file, a variable of the host's
// environment) is the operator's to grant to that server in its sandbox
// block: allow_read for a file, env for a variable. The host reads the
// secret at launch only when it is granted (the launch fails otherwise,
// saying the grant); plughost check reports the same, and a source that
// is missing or unset.

// Source is one secret source of a declaration: a variable (Env) or a
// file (File).
type Source struct {
	// Member names it in the declaration: "bearer_token_file",
	// "header_files: Authorization", "env_files: API_KEY",
	// "oauth: client_secret_env".
	Member string
	// Env is the variable of the host's environment; File the file. One
	// of them is set.
	Env, File string
}

// Sources returns s's secret sources, in the declaration's order of
// members (and sorted by name within header_files, env_files and
// user_config_files).
func (s *Server) Sources() []Source {
	var out []Source
	if s.BearerTokenEnv != "" {
		out = append(out, Source{Member: "bearer_token_env", Env: s.BearerTokenEnv})
	}
	if s.BearerTokenFile != "" {
		out = append(out, Source{Member: "bearer_token_file", File: s.BearerTokenFile})
	}
	for _, h := range slices.Sorted(maps.Keys(s.HeaderFiles)) {
		out = append(out, Source{Member: "header_files: " + h, File: s.HeaderFiles[h]})
	}
	if o := s.OAuth; o != nil {
		if o.ClientSecretEnv != "" {
			out = append(out, Source{Member: "oauth: client_secret_env", Env: o.ClientSecretEnv})
		}
		if o.ClientSecretFile != "" {
			out = append(out, Source{Member: "oauth: client_secret_file", File: o.ClientSecretFile})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.EnvFiles)) {
		out = append(out, Source{Member: "env_files: " + k, File: s.EnvFiles[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(s.UserConfigFiles)) {
		out = append(out, Source{Member: "user_config_files: " + k, File: s.UserConfigFiles[k]})
	}
	return out
}

// UngrantedError is a secret source that the server's sandbox policy does
// not grant it.
type UngrantedError struct {
	Source Source
	// Path is the file as it would be read (where a link leads); "" for
	// a variable.
	Path string
	// Grant is the line that grants it in the server's sandbox block
	// (`allow_read = ["/path"]`, `env = ["NAME"]`); Block that block
	// (`sandbox { plugin "NAME" { ... } }`).
	Grant, Block string
}

func (e *UngrantedError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s %s: the operator passes it to this server with %s in %s", e.Source.Member, e.Source.Env, e.Grant, e.Block)
	}
	return fmt.Sprintf("%s %s: the operator grants it to this server with %s in %s", e.Source.Member, e.Path, e.Grant, e.Block)
}

// Granted returns nil when pol, the sandbox policy of the plugin name,
// grants src (a variable passed through with env, a file readable where a
// link leads); else an *UngrantedError saying the grant to add.
func (src Source) Granted(pol *sandbox.Policy, name string) error {
	block := fmt.Sprintf("sandbox { plugin %q { ... } }", name)
	switch {
	case src.Env != "":
		if !slices.Contains(pol.Env, src.Env) {
			return &UngrantedError{Source: src, Grant: fmt.Sprintf("env = [%q]", src.Env), Block: block}
		}
	case src.File != "":
		file := filepath.Clean(src.File)
		if real, err := filepath.EvalSymlinks(file); err == nil {
			file = real // where a link leads is what would be read
		}
		if !pol.Readable(file) {
			return &UngrantedError{Source: src, Path: file, Grant: fmt.Sprintf("allow_read = [%q]", file), Block: block}
		}
	}
	return nil
}

// Missing says what is wrong with src where the host reads it, with
// getenv reading the host's environment: a variable unset or empty, a
// file that does not exist or cannot be read; "" when nothing is (the
// launch still checks the file's content and mode).
func (src Source) Missing(getenv func(string) string) string {
	if src.Env != "" {
		if getenv(src.Env) == "" {
			return fmt.Sprintf("%s: $%s is empty or unset", src.Member, src.Env)
		}
		return ""
	}
	f, err := os.Open(src.File)
	if err != nil {
		return fmt.Sprintf("%s: %v", src.Member, err)
	}
	f.Close()
	return ""
}

// Granted returns the first of s's secret sources that pol, the sandbox
// policy of the plugin name, does not grant (an *UngrantedError); nil
// when it grants them all.
func (s *Server) Granted(pol *sandbox.Policy, name string) error {
	for _, src := range s.Sources() {
		if err := src.Granted(pol, name); err != nil {
			return err
		}
	}
	return nil
}
