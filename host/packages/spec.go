package packages

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The package managers a Spec is installed with.
const (
	NPM = "npm" // npx, bunx: the npm registry's packages, run by node
	Pip = "pip" // uvx, pipx run: PyPI's packages, in a virtual environment
)

// Spec is a package-runner one-liner as a declaration writes it
// ({"command": "npx", "args": ["-y", "@acme/notes-mcp@^1", "--verbose"]}),
// taken apart.
type Spec struct {
	// Runner is the command declared: "npx", "bunx", "uvx" or "pipx run".
	Runner string
	// Manager is NPM or Pip.
	Manager string
	// Name is the package's name ("@acme/notes-mcp", "mcp-server-fetch").
	Name string
	// Version is the version or range declared ("1.2.3", "^1", ">=1,<2");
	// "" for the newest.
	Version string
	// Bin is the program to run when the declaration names one apart from
	// the package (npx -p PKG BIN, uvx --from PKG BIN); "" for the
	// package's own.
	Bin string
	// Args are the server's own arguments, after the package.
	Args []string
}

// String is the package as a runner would name it: "@acme/notes-mcp@^1",
// "mcp-server-fetch==2.0.1".
func (s *Spec) String() string {
	switch {
	case s.Version == "":
		return s.Name
	case s.Manager == Pip && !strings.ContainsAny(s.Version[:1], "<>=!~"):
		return s.Name + "==" + s.Version
	case s.Manager == Pip:
		return s.Name + s.Version
	}
	return s.Name + "@" + s.Version
}

// ErrUnsupported is Parse's error for a runner's option or package form
// that install-once cannot honour (a git URL, a local path, --python):
// the message says what to declare instead.
var ErrUnsupported = errors.New("not supported by install-once")

// Parse recognises a package runner's one-liner: command is the
// declaration's command (a name or a path: its base name decides) and
// args its arguments. ok is false when command is no package runner (the
// declaration runs as it is); err is set when it is one but its
// arguments are not understood.
//
// The forms understood are those of MCP servers' READMEs:
//
//	npx [-y|--yes] [-q] PKG[@VERSION] ARGS…      npx -p|--package PKG BIN ARGS…
//	bunx [--bun] [-y] PKG[@VERSION] ARGS…        bunx -p|--package PKG BIN ARGS…
//	uvx PKG[==VERSION|@VERSION] ARGS…            uvx --from PKG[==VERSION] BIN ARGS…
//	pipx run PKG[==VERSION] ARGS…                pipx run --spec PKG[==VERSION] BIN ARGS…
func Parse(command string, args []string) (s *Spec, ok bool, err error) {
	base := filepath.Base(command)
	switch base {
	case "npx", "bunx":
		s, err = parseRunner(base, NPM, args, map[string]bool{"-y": true, "--yes": true, "-q": true, "--quiet": true, "--silent": true, "--bun": true},
			[]string{"-p", "--package"})
	case "uvx":
		s, err = parseRunner(base, Pip, args, map[string]bool{"-q": true, "--quiet": true}, []string{"--from"})
	case "pipx":
		if len(args) == 0 || args[0] != "run" {
			return nil, false, nil // pipx install, list…: not a server
		}
		s, err = parseRunner("pipx run", Pip, args[1:], map[string]bool{"-q": true, "--quiet": true}, []string{"--spec"})
	default:
		return nil, false, nil
	}
	return s, true, err
}

// parseRunner reads a runner's arguments: flags (ignored ones, and the
// options naming the package apart from the program), the package (or
// the program), then the server's arguments.
func parseRunner(runner, manager string, args []string, ignored map[string]bool, from []string) (*Spec, error) {
	s := &Spec{Runner: runner, Manager: manager}
	var pkg string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") {
			break
		}
		if ignored[a] {
			continue
		}
		name, val, eq := strings.Cut(a, "=")
		if !slices.Contains(from, name) {
			return nil, fmt.Errorf("%s option %q: %w; install the package yourself and declare the program it installs", runner, a, ErrUnsupported)
		}
		if !eq {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%s %s: which package?", runner, a)
			}
			i++
			val = args[i]
		}
		pkg = val
	}
	if i >= len(args) {
		return nil, fmt.Errorf("%s: no package named", runner)
	}
	if pkg != "" { // the first positional argument is the program
		s.Bin = args[i]
	} else {
		pkg = args[i]
	}
	s.Args = append([]string{}, args[i+1:]...)
	var err error
	if manager == NPM {
		s.Name, s.Version, err = splitNPM(pkg)
	} else {
		s.Name, s.Version, err = splitPip(pkg)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", runner, pkg, err)
	}
	return s, nil
}

// npmName is a registry package's name, scoped or not.
var npmName = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)

// splitNPM splits "@scope/pkg@^1" into its name and version range. Only
// registry packages install once: git, tarball and path specs are
// refused, since what they name can change under the same spec without
// a registry's integrity.
func splitNPM(pkg string) (name, version string, err error) {
	at := strings.LastIndex(pkg, "@")
	name = pkg
	if at > 0 {
		name, version = pkg[:at], pkg[at+1:]
	}
	if !npmName.MatchString(name) {
		return "", "", fmt.Errorf("not an npm registry package (git URLs, tarballs and paths are %w: install it yourself and declare \"node\" and its file)", ErrUnsupported)
	}
	if version != "" && strings.ContainsAny(version, ":/ ") {
		return "", "", fmt.Errorf("version %q: %w (a version, a range or a dist-tag)", version, ErrUnsupported)
	}
	return name, version, nil
}

// pipName is a distribution's name (PEP 508), with optional extras.
var pipName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._,-]+\])?$`)

// splitPip splits "mcp-server-fetch==2.0.1" (or uvx's
// "mcp-server-fetch@2.0.1") into its name and version (an exact version
// after == or @, else the specifier as written: ">=2,<3").
func splitPip(pkg string) (name, version string, err error) {
	name = pkg
	if n, v, ok := strings.Cut(pkg, "@"); ok {
		name, version = n, v
	} else if i := strings.IndexAny(pkg, "<>=!~"); i > 0 {
		name, version = pkg[:i], pkg[i:]
		version = strings.TrimPrefix(version, "==")
	}
	if !pipName.MatchString(name) {
		return "", "", fmt.Errorf("not a package index distribution (URLs and paths are %w)", ErrUnsupported)
	}
	return name, version, nil
}
