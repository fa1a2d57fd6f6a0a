package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ServerGrants returns what a declared MCP server (a stdio program the
// host wraps as a plugin) needs to read, beyond the default policy, to run
// as command with args. A declaration is a file anyone who can write the
// plugin directory may drop, so what it gets on its own is only what
// cannot serve to read the operator's files:
//
//   - the program, the file behind it when it is a link, and a "#!"
//     script's interpreter;
//   - when the interpreter is node or python (by its name): the
//     interpreter, what it needs to start (node: /etc/ssl/openssl.cnf;
//     python: its standard library, site-packages and virtual
//     environment), and, for a node script inside a node_modules tree
//     (a package installed with npm), that whole tree.
//
// With a runtime r the operator chose (runtime = "node" in the plugin's
// block), it also gets what a plugin script of that runtime gets: the
// script's own directory (the script being the program, or the
// interpreter's script argument: its first argument that is no option;
// none after node -e/-p or python -c/-m), its node_modules, and the
// RUNPATH directories of the program and the interpreter. The script and
// anything else a declaration names (server-filesystem's directories, a
// user's own server.js) are otherwise the operator's to grant, as for any
// plugin. command must be absolute.
func ServerGrants(r Runtime, command string, args []string) ([]string, error) {
	return serverGrants(r, command, args, PluginPATH)
}

// serverGrants is ServerGrants with the PATH in which a "#!/usr/bin/env
// prog" line's prog is looked up.
func serverGrants(r Runtime, command string, args []string, searchPATH string) ([]string, error) {
	if !filepath.IsAbs(command) {
		return nil, fmt.Errorf("command %q is not an absolute path", command)
	}
	real, err := filepath.EvalSymlinks(command)
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", command, err)
	}
	decided := r != "" // the operator chose a runtime: the script's directory and RUNPATHs too
	grants := []string{command, real}
	if decided {
		grants = append(grants, runpath(real)...)
	}
	interp, script := real, ""
	if sh, shArgs, ok := Shebang(real); ok { // npx, or the server itself as a script
		script = real
		interp = sh
		grants = append(grants, sh)
		if filepath.Base(sh) == "env" {
			if prog := envProgram(shArgs); prog != "" {
				if !filepath.IsAbs(prog) {
					prog = inPATH(prog, searchPATH)
				}
				if prog != "" {
					interp = prog
					grants = append(grants, prog)
				}
			}
		}
	}
	if r == "" {
		r = runtimeOf(filepath.Base(interp))
	}
	if r == "" {
		return grants, nil
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	if script == "" {
		script = scriptArg(r, args)
	}
	interpReal := interp
	if rp, err := filepath.EvalSymlinks(interp); err == nil {
		interpReal = rp
	}
	grants = append(grants, interp, interpReal)
	if decided {
		grants = append(grants, runpath(interpReal)...)
	}
	if script != "" {
		scriptReal := script
		if rp, err := filepath.EvalSymlinks(script); err == nil {
			scriptReal = rp
		}
		dir := filepath.Dir(scriptReal)
		if decided {
			grants = append(grants, dir)
			if r == RuntimeNode {
				grants = append(grants, filepath.Join(dir, "node_modules"))
			}
		}
		if r == RuntimeNode {
			if tree := nodeModulesTree(scriptReal); tree != "" {
				grants = append(grants, tree)
			}
		}
	}
	switch r {
	case RuntimeNode:
		grants = append(grants, "/etc/ssl/openssl.cnf")
	case RuntimePython:
		grants = append(grants, pythonPaths(interp, interpReal)...)
	}
	return grants, nil
}

// scriptArg returns the script the interpreter of runtime r runs with
// args: its first argument that is no option, when that is an absolute
// path of a regular file; "" when there is none, or when the options say
// the program is inline code or a module (node -e/-p, python -c/-m) or
// stdin ("-"), whatever files follow (they are the program's arguments,
// the operator's to grant). Options taking their value as the next
// argument (node -r, python -W, ...) skip it.
func scriptArg(r Runtime, args []string) string {
	inline, withValue := "ep", map[string]bool{"-r": true, "--require": true, "--import": true, "--loader": true, "--experimental-loader": true, "-C": true, "--conditions": true, "--env-file": true}
	if r == RuntimePython {
		inline, withValue = "cm", map[string]bool{"-W": true, "-X": true}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return regularAbs(args[i+1])
			}
			return ""
		case a == "-":
			return ""
		case r == RuntimeNode && (a == "--eval" || a == "--print" || strings.HasPrefix(a, "--eval=") || strings.HasPrefix(a, "--print=")):
			return ""
		case strings.HasPrefix(a, "--"):
			if withValue[a] {
				i++
			}
		case strings.HasPrefix(a, "-"):
			if strings.ContainsAny(a[1:], inline) {
				return ""
			}
			if withValue[a] {
				i++
			}
		default:
			return regularAbs(a)
		}
	}
	return ""
}

// regularAbs returns path when it is absolute and names a regular file
// (following links), else "".
func regularAbs(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && filepath.IsAbs(path) {
		return path
	}
	return ""
}

// runtimeOf is the runtime whose interpreter is named base, or "".
func runtimeOf(base string) Runtime {
	for _, r := range Runtimes {
		if runtimeSpecs[r].names.MatchString(base) {
			return r
		}
	}
	return ""
}

// nodeModulesTree returns the outermost node_modules directory that path
// lies in ("" for none): where node finds the dependencies of a package
// installed there.
func nodeModulesTree(path string) string {
	const nm = string(filepath.Separator) + "node_modules" + string(filepath.Separator)
	i := strings.Index(path, nm)
	if i < 0 {
		return ""
	}
	return path[:i+len(nm)-1]
}

// LookCommand resolves a declared server's command: an absolute path as
// it is, a name in searchPATH (the sandbox's PluginPATH unless the
// declaration sets its own PATH).
func LookCommand(command, searchPATH string) (string, error) {
	if filepath.IsAbs(command) {
		if !isExecutable(command) {
			return "", fmt.Errorf("command %s is not an executable file", command)
		}
		return command, nil
	}
	if strings.ContainsRune(command, filepath.Separator) {
		return "", fmt.Errorf("command %q: give an absolute path, or a name found in PATH (%s)", command, searchPATH)
	}
	if found := inPATH(command, searchPATH); found != "" {
		return found, nil
	}
	return "", fmt.Errorf("command %q is not in the sandbox's PATH (%s): give its absolute path", command, searchPATH)
}
