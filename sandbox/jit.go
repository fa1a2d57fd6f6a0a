package sandbox

import (
	"path/filepath"
	"regexp"
)

// jitRuntimes are the interpreters that compile code at run time into
// memory they write and then execute, and cannot start otherwise: node
// (V8) and deno (V8) abort at their first compiled function when a
// writable and executable mapping is refused, bun (JavaScriptCore) maps
// its JIT's memory the same way. Measured with node 20 and 22: "Check
// failed: 12 == (*__errno_location ())" in v8::base::OS::SetPermissions,
// even for console.log("hello"); python 3 (ctypes callbacks included),
// glibc programs and Go programs run with it refused.
var jitRuntimes = regexp.MustCompile(`^(node|nodejs|deno|bun)$`)

// JITRuntime returns the name of the JIT runtime that program runs on:
// program itself when it is one (node, nodejs, deno or bun, by its name,
// symbolic links followed), or the interpreter its "#!" line names,
// directly or through env ("#!/usr/bin/env node", as npx has); "" when
// none. Under a policy that leaves AllowJIT unset, such a program may map
// memory writable and executable.
func JITRuntime(program string) string {
	names := []string{filepath.Base(program)}
	if real, err := filepath.EvalSymlinks(program); err == nil {
		names = append(names, filepath.Base(real))
		program = real
	}
	if interp, args, ok := Shebang(program); ok {
		names = append(names, filepath.Base(interp))
		if filepath.Base(interp) == "env" {
			names = append(names, filepath.Base(envProgram(args)))
		}
	}
	for _, n := range names {
		if jitRuntimes.MatchString(n) {
			return n
		}
	}
	return ""
}

// JIT reports whether a plugin under p that runs program (its file, or a
// declared server's command) may map memory writable and executable: when
// AllowJIT says so, or, AllowJIT unset, when Runtime is node or program
// runs on a JIT runtime ([JITRuntime]). why says which, for the log.
func (p *Policy) JIT(program string) (allowed bool, why string) {
	switch {
	case p.AllowJIT != nil && *p.AllowJIT:
		return true, "allow_jit"
	case p.AllowJIT != nil:
		return false, ""
	case p.Runtime == RuntimeNode:
		return true, `runtime "node" compiles JavaScript at run time (allow_jit = false refuses it)`
	}
	if rt := JITRuntime(program); rt != "" {
		return true, rt + " compiles code at run time (allow_jit = false refuses it)"
	}
	return false, ""
}
