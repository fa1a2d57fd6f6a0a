package manager

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// diagnose explains the usual reasons why the plugin name at path failed
// its handshake: go-plugin appends it to the error. A "#!" script is told
// about its interpreter, which must be able to start in the sandbox.
func diagnose(name, path string) string {
	interp, prog, ok := scriptInterpreter(path)
	if !ok {
		return fmt.Sprintf("(%s must be a plughost plugin built for %s/%s, and must print nothing to stdout before the go-plugin handshake)",
			path, runtime.GOOS, runtime.GOARCH)
	}
	runs := interp
	if prog != "" {
		runs = fmt.Sprintf("%s (through %s)", prog, interp)
	}
	var fix string
	if rt := runtimeOf(prog, interp); rt != "" {
		fix = fmt.Sprintf(`its interpreter must be able to start: give the plugin the %s preset, sandbox { plugin %q { runtime = %q } }, if it has none`,
			rt, name, rt)
	} else {
		fix = fmt.Sprintf(`its interpreter, and every program it starts, must be readable: a launcher of node or python needs runtime = "node" or "python" in sandbox { plugin %q { ... } }, anything else allow_read`,
			name)
	}
	return fmt.Sprintf("(%s is a script run by %s: in the sandbox %s; and it must print go-plugin's handshake line (1|2|unix|/path/to.sock|grpc) first on stdout; its stderr says what went wrong)",
		path, runs, fix)
}

// scriptInterpreter returns the interpreter of the "#!" script at path and,
// for "#!/usr/bin/env prog", prog; ok is false for a file that is not one.
func scriptInterpreter(path string) (interp, prog string, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	if !strings.HasPrefix(line, "#!") || (err != nil && err != io.EOF) {
		return "", "", false
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return "", "", false
	}
	interp = fields[0]
	if filepath.Base(interp) == "env" {
		for _, a := range fields[1:] {
			if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
				prog = a
				break
			}
		}
	}
	return interp, prog, true
}

var (
	nodeName   = regexp.MustCompile(`^(node|nodejs)$`)
	pythonName = regexp.MustCompile(`^python[0-9.]*$`)
)

// runtimeOf is the sandbox runtime preset (host/config's runtime) of an
// interpreter, or "".
func runtimeOf(prog, interp string) string {
	base := filepath.Base(interp)
	if prog != "" {
		base = filepath.Base(prog)
	}
	switch {
	case nodeName.MatchString(base):
		return "node"
	case pythonName.MatchString(base):
		return "python"
	}
	return ""
}
