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
// runtime preset), a launcher that installs a package (npx, uvx, pipx run),
// whether the server is one known to call outside services (netNeeds), a
// container engine, and the paths among its arguments, env values and cwd
// (see paths).
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
	tool, pkg := downloader(base, s.Args)
	if pkg != "" {
		add(InfoNote, "%s %s: plughost installs it once, at the server's first start, into the server's own cache "+
			"(that step alone has the network); later starts run offline from there", tool, pkg)
	}
	known := packageOf(pkg, s.Args)
	if host, ok := netNeeds[known]; ok {
		g.net = "all"
		g.netWhy = known + " calls outside services at run time"
		if host != "" {
			g.netWhy += fmt.Sprintf("; to narrow it: allow_net = [%q]", host)
		}
		add(GrantNote, `allow_net = "all": %s`, g.netWhy)
	} else {
		add(InfoNote, `no network: if it calls an outside API, add allow_net = ["HOST:443"] to its plugin block`)
	}
	c.paths(name, s, known, pkg != "", g, add)
}

// netNeeds are the servers of the official set (and a few common ones)
// that call outside services at run time, by package, with the host to
// narrow allow_net to when there is one (""; any host: fetch, a browser,
// a database named in the arguments). import grants them allow_net =
// "all"; every other server gets no network, with a line saying how to
// add it: import cannot tell what a server calls.
var netNeeds = map[string]string{
	"@modelcontextprotocol/server-github":                  "api.github.com:443",
	"@modelcontextprotocol/server-gitlab":                  "gitlab.com:443",
	"@modelcontextprotocol/server-slack":                   "slack.com:443",
	"@modelcontextprotocol/server-brave-search":            "api.search.brave.com:443",
	"@modelcontextprotocol/server-google-maps":             "maps.googleapis.com:443",
	"@modelcontextprotocol/server-gdrive":                  "www.googleapis.com:443",
	"@modelcontextprotocol/server-sentry":                  "sentry.io:443",
	"@modelcontextprotocol/server-everart":                 "",
	"@modelcontextprotocol/server-puppeteer":               "",
	"@modelcontextprotocol/server-postgres":                "",
	"@modelcontextprotocol/server-redis":                   "",
	"@modelcontextprotocol/server-aws-kb-retrieval-server": "",
	"mcp-server-fetch":                                     "",
	"mcp-server-sentry":                                    "sentry.io:443",
	"@brave/brave-search-mcp-server":                       "api.search.brave.com:443",
}

// packageOf returns the package a server runs, without its version: pkg
// (what a launcher names) or the package of an argument inside a
// node_modules tree (node /opt/mcp/node_modules/@scope/pkg/dist/index.js);
// "" when neither.
func packageOf(pkg string, args []string) string {
	if pkg != "" {
		return stripVersion(pkg)
	}
	for _, a := range args {
		_, rest, ok := strings.Cut(a, "/node_modules/")
		if !ok {
			continue
		}
		for strings.Contains(rest, "/node_modules/") { // the innermost package
			_, rest, _ = strings.Cut(rest, "/node_modules/")
		}
		parts := strings.SplitN(rest, "/", 3)
		if strings.HasPrefix(parts[0], "@") && len(parts) > 1 {
			return parts[0] + "/" + parts[1]
		}
		return parts[0]
	}
	return ""
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
// name) and args run a package a launcher installs: npx, uvx, uv tool run,
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
