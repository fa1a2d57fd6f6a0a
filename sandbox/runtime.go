package sandbox

import (
	"bufio"
	"debug/elf"
	"debug/macho"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Runtime names an interpreter preset of a Policy: what a plugin written for
// that interpreter needs to read, beyond the default policy's system
// libraries, and nothing more. It is set per plugin (runtime = "node" in the
// plugin's block of the configuration file).
type Runtime string

// The runtimes.
const (
	// RuntimeNode grants, read-only: the node interpreter (the one the
	// plugin's "#!" line names, else the first node in the plugin's PATH),
	// the directories of its RUNPATH (libraries beside a relocated node),
	// /etc/ssl/openssl.cnf (node reads it at start and exits when it may
	// not), the plugin file's own directory (symbolic links followed), and
	// that directory's node_modules (wherever a link there points).
	RuntimeNode Runtime = "node"
	// RuntimePython grants, read-only: the python interpreter (the "#!"
	// line's, else the first python3 in the plugin's PATH), the directories
	// of its RUNPATH, its standard library and site-packages
	// (<prefix>/lib/pythonX.Y, <prefix>/lib/python3/dist-packages,
	// /usr/local/lib/pythonX.Y/dist-packages, /etc/pythonX.Y), the
	// virtual environment the interpreter belongs to (the directory holding
	// pyvenv.cfg), and the plugin file's own directory.
	RuntimePython Runtime = "python"
)

// Runtimes lists the runtimes a Policy accepts.
var Runtimes = []Runtime{RuntimeNode, RuntimePython}

// PluginPATH is the PATH a sandboxed plugin gets. A "#!/usr/bin/env prog"
// line finds prog only there.
const PluginPATH = "/usr/local/bin:/usr/bin:/bin"

// runtimeSpec is what a runtime looks for.
type runtimeSpec struct {
	// names are the interpreter's file names, as a "#!" line or PATH
	// gives them; the first is looked up in PATH.
	names *regexp.Regexp
	path  []string // looked up in PluginPATH, in order
}

var runtimeSpecs = map[Runtime]runtimeSpec{
	RuntimeNode:   {names: regexp.MustCompile(`^(node|nodejs)$`), path: []string{"node", "nodejs"}},
	RuntimePython: {names: regexp.MustCompile(`^python(3(\.[0-9]+)?)?$`), path: []string{"python3", "python"}},
}

func (r Runtime) check() error {
	if r == "" || slices.Contains(Runtimes, r) {
		return nil
	}
	return fmt.Errorf("runtime: unknown runtime %q (want %q or %q; for another interpreter, grant what it needs with allow_read)", string(r), RuntimeNode, RuntimePython)
}

// RuntimeGrants returns the paths a plugin at path needs read (and execute)
// access to under runtime r, beyond the default policy; nil for the empty
// runtime. Paths that do not exist are included: the launcher drops them.
// It fails when it finds no interpreter, saying what to write instead.
func RuntimeGrants(r Runtime, path string) ([]string, error) {
	return runtimeGrants(r, path, PluginPATH)
}

// runtimeGrants is RuntimeGrants with the PATH in which the interpreter is
// looked up.
func runtimeGrants(r Runtime, path, searchPATH string) ([]string, error) {
	if r == "" {
		return nil, nil
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	spec := runtimeSpecs[r]
	interp, err := findInterpreter(r, spec, path, searchPATH)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(interp)
	if err != nil {
		return nil, fmt.Errorf("runtime %q: interpreter %s: %w", r, interp, err)
	}
	grants := []string{interp, real}
	grants = append(grants, runpath(real)...)
	grants = append(grants, machoLibraryDirs(real)...)
	dir := path
	if rp, err := filepath.EvalSymlinks(path); err == nil {
		dir = rp
	}
	dir = filepath.Dir(dir)
	grants = append(grants, dir)
	switch r {
	case RuntimeNode:
		grants = append(grants, "/etc/ssl/openssl.cnf", filepath.Join(dir, "node_modules"))
	case RuntimePython:
		grants = append(grants, pythonPaths(interp, real)...)
	}
	return grants, nil
}

// findInterpreter returns the interpreter of runtime r for the plugin at
// path: the one its "#!" line names (directly or through env), else the
// first of the runtime's names in PluginPATH (a launcher script, or a
// binary).
func findInterpreter(r Runtime, spec runtimeSpec, path, searchPATH string) (string, error) {
	interp, args, isScript := Shebang(path)
	if isScript {
		if spec.names.MatchString(filepath.Base(interp)) {
			return interp, nil
		}
		if filepath.Base(interp) == "env" {
			if prog := envProgram(args); prog != "" && spec.names.MatchString(filepath.Base(prog)) {
				if filepath.IsAbs(prog) {
					return prog, nil
				}
				if found := inPATH(prog, searchPATH); found != "" {
					return found, nil
				}
				hint := ""
				if host, err := exec.LookPath(prog); err == nil {
					if real, err := filepath.EvalSymlinks(host); err == nil {
						host = real
					}
					hint = fmt.Sprintf(" (on this host: #!%s)", host)
				}
				return "", fmt.Errorf("runtime %q: the #! line of %s runs %s through %s, but the plugin's PATH (%s) has no %s: write the interpreter's absolute path in the #! line%s",
					r, path, prog, interp, searchPATH, prog, hint)
			}
		}
	}
	for _, name := range spec.path {
		if found := inPATH(name, searchPATH); found != "" {
			return found, nil
		}
	}
	return "", fmt.Errorf("runtime %q: no %s interpreter in the plugin's PATH (%s): start %s with a #! line naming the interpreter's absolute path",
		r, spec.path[0], searchPATH, path)
}

// envProgram is the program of a "#!/usr/bin/env [-S] [-i] prog args" line.
func envProgram(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
			continue
		}
		return a
	}
	return ""
}

// inPATH returns the executable prog in one of the directories of
// searchPATH, or "".
func inPATH(prog, searchPATH string) string {
	for _, dir := range filepath.SplitList(searchPATH) {
		if p := filepath.Join(dir, prog); isExecutable(p) {
			return p
		}
	}
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// ScriptRuntime reads the "#!" line of the script at path: its
// interpreter, the program a "#!/usr/bin/env prog" line runs ("" for any
// other line), and the runtime preset that interpreter needs ("" when none
// fits it); ok is false when path is not a script.
func ScriptRuntime(path string) (interp, prog string, rt Runtime, ok bool) {
	interp, args, ok := Shebang(path)
	if !ok {
		return "", "", "", false
	}
	base := filepath.Base(interp)
	if base == "env" {
		prog = envProgram(args)
		base = filepath.Base(prog)
	}
	for _, r := range Runtimes {
		if runtimeSpecs[r].names.MatchString(base) {
			rt = r
		}
	}
	return interp, prog, rt, true
}

// Shebang returns the interpreter and its arguments of the "#!" script at
// path; ok is false when path is not a script (or cannot be read).
func Shebang(path string) (interp string, args []string, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	if !strings.HasPrefix(line, "#!") || (err != nil && err != io.EOF) {
		return "", nil, false
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return "", nil, false
	}
	return fields[0], fields[1:], true
}

// runpath returns the directories of an ELF binary's RUNPATH and RPATH,
// $ORIGIN expanded: where a relocated interpreter (pyenv's python, a node
// with its own libraries) finds the libraries the system's /lib does not
// hold.
func runpath(bin string) []string {
	f, err := elf.Open(bin)
	if err != nil {
		return nil
	}
	defer f.Close()
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, _ := f.DynString(tag)
		for _, v := range vals {
			for _, d := range filepath.SplitList(v) {
				d = strings.NewReplacer("${ORIGIN}", filepath.Dir(bin), "$ORIGIN", filepath.Dir(bin)).Replace(d)
				if filepath.IsAbs(d) {
					dirs = append(dirs, filepath.Clean(d))
				}
			}
		}
	}
	return dirs
}

// machoLibraryDirs returns the directories of the libraries a Mach-O
// binary (macOS) loads from outside the system's (/usr/lib, /System, which
// every plugin reads): Homebrew's node loads its ICU, OpenSSL and libuv
// from /opt/homebrew/opt, its python the Python framework beside it. A
// name with @executable_path or @loader_path is taken from the binary's
// directory; an @rpath one from each of its LC_RPATH directories (their
// own @ prefixes expanded the same way). Nil for a file that is not
// Mach-O; for a universal binary, every architecture's.
func machoLibraryDirs(bin string) []string {
	var files []*macho.File
	if fat, err := macho.OpenFat(bin); err == nil {
		defer fat.Close()
		for _, a := range fat.Arches {
			files = append(files, a.File)
		}
	} else if f, err := macho.Open(bin); err == nil {
		defer f.Close()
		files = append(files, f)
	}
	origin := strings.NewReplacer("@executable_path", filepath.Dir(bin), "@loader_path", filepath.Dir(bin))
	var dirs []string
	add := func(lib string) {
		d := filepath.Dir(origin.Replace(lib))
		if !filepath.IsAbs(d) || within(d, "/usr/lib") || within(d, "/System") || slices.Contains(dirs, filepath.Clean(d)) {
			return
		}
		dirs = append(dirs, filepath.Clean(d))
	}
	for _, f := range files {
		var rpaths []string
		for _, l := range f.Loads {
			if r, ok := l.(*macho.Rpath); ok {
				rpaths = append(rpaths, r.Path)
			}
		}
		libs, _ := f.ImportedLibraries()
		for _, lib := range libs {
			rest, isRpath := strings.CutPrefix(lib, "@rpath/")
			if !isRpath {
				add(lib)
				continue
			}
			for _, r := range rpaths {
				add(filepath.Join(origin.Replace(r), rest))
			}
		}
	}
	return dirs
}

var pythonVersion = regexp.MustCompile(`^python([0-9]+\.[0-9]+)$`)

// pythonPaths are the standard library and site-packages of the python at
// real (resolved) and the virtual environment of interp (as named).
func pythonPaths(interp, real string) []string {
	prefix := filepath.Dir(filepath.Dir(real))
	var versions []string
	if m := pythonVersion.FindStringSubmatch(filepath.Base(real)); m != nil {
		versions = []string{m[1]}
	} else {
		matches, _ := filepath.Glob(filepath.Join(prefix, "lib", "python3.*"))
		for _, m := range matches {
			if v := strings.TrimPrefix(filepath.Base(m), "python"); pythonVersion.MatchString("python" + v) {
				versions = append(versions, v)
			}
		}
	}
	var out []string
	for _, v := range versions {
		out = append(out,
			filepath.Join(prefix, "lib", "python"+v),
			filepath.Join(prefix, "lib", "python"+strings.ReplaceAll(v, ".", "")+".zip"),
			filepath.Join("/usr/local/lib", "python"+v, "dist-packages"), // Debian: pip as root
			filepath.Join("/etc", "python"+v),                            // Debian: sitecustomize
		)
	}
	out = append(out, filepath.Join(prefix, "lib", "python3", "dist-packages")) // Debian's packages
	// A virtual environment: <venv>/bin/python → the base interpreter; its
	// pyvenv.cfg and site-packages are in <venv>.
	if venv := filepath.Dir(filepath.Dir(interp)); fileExists(filepath.Join(venv, "pyvenv.cfg")) {
		out = append(out, venv)
	}
	return out
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// interpreters returns what a "#!" script at path needs to read and execute:
// its interpreter and, for "/usr/bin/env prog", prog as found in the stage's
// PATH. A binary needs nothing more.
func interpreters(path string) []string {
	interp, args, ok := Shebang(path)
	if !ok {
		return nil
	}
	out := []string{interp}
	if filepath.Base(interp) == "env" {
		if prog := envProgram(args); prog != "" {
			if filepath.IsAbs(prog) {
				out = append(out, prog)
			} else if found := inPATH(prog, PluginPATH); found != "" {
				out = append(out, found)
			}
		}
	}
	return out
}
