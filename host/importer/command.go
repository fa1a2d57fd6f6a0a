package importer

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/plughost/plughost/host/declared"
)

// The interpreters of the sandbox's runtime presets, as sandbox/runtime.go
// recognises them, and the launchers that imply them.
var (
	nodeName   = regexp.MustCompile(`^(node|nodejs|npx)$`)
	pythonName = regexp.MustCompile(`^(python(3(\.[0-9]+)?)?|uv|uvx|pipx)$`)
)

// command looks at what a stdio server runs: its interpreter (for the
// runtime preset), a launcher that downloads the package at every start
// (npx, uvx, pipx run), a container engine, and the paths among its
// arguments, which the sandbox will have to grant.
func (c *converter) command(name string, s *declared.Server, g *grants, add func(string, string, ...any)) {
	base := filepath.Base(s.Command)
	g.runtime = runtimeOf(base)
	if g.runtime == "" && filepath.IsAbs(s.Command) {
		g.runtime = runtimeOf(shebang(c.head(s.Command)))
	}
	switch base {
	case "docker", "podman", "nerdctl":
		g.container = true
		add(NotCarried, "%s runs the server in a container: that needs the container daemon's socket, which the sandbox does not grant "+
			"(and granting it is as good as root), so it cannot run in plughost's sandbox as it is; run the container outside plughost "+
			"serving Streamable HTTP and declare its url, or install the server itself", base)
		return
	}
	if tool, pkg := downloader(base, s.Args); pkg != "" {
		g.netWhy = tool + " downloads " + pkg + " at every start"
		install := fmt.Sprintf("npm install --prefix /opt/mcp/%s %s", name, pkg)
		declare := fmt.Sprintf(`"command": "node", "args": ["/opt/mcp/%s/node_modules/%s/<the file its package.json \"bin\" names>", …]`, name, stripVersion(pkg))
		cache := "npm"
		if tool != "npx" {
			cache = "uv"
			if tool == "pipx run" {
				cache = "pipx"
			}
			install = fmt.Sprintf("python3 -m venv /opt/mcp/%s && /opt/mcp/%s/bin/pip install %s", name, name, pkg)
			declare = fmt.Sprintf(`"command": "/opt/mcp/%s/bin/%s" (the script it installs), runtime = "python"`, name, stripVersion(pkg))
		}
		add(InfoNote, "%s downloads %s at every start: that needs the network (the sandbox has none by default: the snippet grants "+
			`allow_net = "all"`+") and a writable %s cache; better, install it once:\n    %s\n  and declare %s, with no network (plughost grants the program and its package itself)",
			tool, pkg, cache, install, declare)
	}
	var paths []string
	program := g.runtime != "" // the first file argument of an interpreter is its script, which plughost grants itself
	for _, a := range append(slices.Clone(s.Args), s.Cwd) {
		for _, p := range slices.Compact([]string{a, a[strings.IndexByte(a, '=')+1:]}) { // --root=/srv/data too
			if !filepath.IsAbs(p) || slices.Contains(g.read, p) {
				continue
			}
			if isDir, ok := c.stat(p); ok {
				if program && !isDir {
					program = false
					add(InfoNote, "%s is the program %s runs: the snippet's runtime line grants it (plughost grants a node_modules tree it lies in by itself)", p, base)
					continue
				}
				g.read = append(g.read, p)
				kind := "file"
				if isDir {
					kind = "directory"
				}
				paths = append(paths, p+" ("+kind+")")
			}
		}
	}
	if len(paths) > 0 {
		add(DecideNote, "it names paths on this machine that it will need granted (commented out in the snippet: allow_read, or allow_write to let it change them): %s",
			strings.Join(paths, ", "))
	}
}

// runtimeOf returns the runtime preset of an interpreter's or launcher's
// name, "" for another program.
func runtimeOf(base string) string {
	switch {
	case nodeName.MatchString(base):
		return "node"
	case pythonName.MatchString(base):
		return "python"
	}
	return ""
}

// shebang returns the name of the interpreter a "#!" line runs
// ("#!/usr/bin/env node" is node); "" when line is not one.
func shebang(line string) string {
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	f := strings.Fields(rest)
	if len(f) > 0 && filepath.Base(f[0]) == "env" {
		f = slices.DeleteFunc(f[1:], func(s string) bool { return strings.HasPrefix(s, "-") })
	}
	if len(f) == 0 {
		return ""
	}
	return filepath.Base(f[0])
}

// downloader returns the launcher and the package when command (a base
// name) and args download a package at every start: npx, uvx, uv tool run,
// pipx run.
func downloader(command string, args []string) (tool, pkg string) {
	valued := map[string][]string{ // flags that take a value, the package's flag first
		"npx":      {"--package", "-p", "--cache", "--registry", "--userconfig", "--call", "-c"},
		"uvx":      {"--from", "--with", "--python", "-p", "--index", "--index-url", "--extra-index-url", "--directory"},
		"pipx run": {"--spec", "--python", "--index-url", "--pip-args"},
	}
	switch {
	case command == "npx":
		tool = "npx"
	case command == "uvx":
		tool = "uvx"
	case command == "uv" && len(args) >= 2 && args[0] == "tool" && args[1] == "run":
		tool, args = "uvx", args[2:]
	case command == "pipx" && len(args) >= 1 && args[0] == "run":
		tool, args = "pipx run", args[1:]
	default:
		return "", ""
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		flag, value, hasValue := strings.Cut(a, "=")
		switch {
		case slices.Contains(valued[tool], flag):
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			if flag == valued[tool][0] || (tool == "npx" && flag == "-p") {
				return tool, value
			}
		case strings.HasPrefix(a, "-"):
		default:
			return tool, a
		}
	}
	return "", ""
}

// stripVersion returns a package name without its version or extras:
// "@scope/pkg@1.2" is "@scope/pkg", "mcp-server-fetch==1.0" and
// "pkg[cli]" are "mcp-server-fetch" and "pkg".
func stripVersion(pkg string) string {
	if i := strings.IndexByte(pkg[min(1, len(pkg)):], '@'); i >= 0 {
		pkg = pkg[:i+min(1, len(pkg))]
	}
	if i := strings.IndexAny(pkg, "=<>~![ "); i > 0 {
		pkg = pkg[:i]
	}
	return pkg
}
