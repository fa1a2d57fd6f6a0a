// Package diagnose reads a failed plugin's error and stderr and names the
// one next step its operator can take: the grant to add to its sandbox
// block, the variable to set, the limit to raise. It knows the words
// runtimes use for the usual causes — glibc's and the shell's, Go's,
// Node's and Python's — and nothing of how plughost runs plugins, so it
// is a table of rules tested against real error texts.
//
// A typical use, for the plugin "docs" whose policy grants no network:
//
//	step := diagnose.NextStep(diagnose.Failure{
//		Plugin: "docs",
//		Error:  "exited while starting: exit status 1",
//		Stderr: "npm error getaddrinfo EAI_AGAIN registry.npmjs.org",
//	})
//	// add allow_net = ["registry.npmjs.org:443"] (or "all") to plugin "docs" in the sandbox block
//
// The rules, first match wins (the causes that keep a server from starting
// at all come first):
//
//  1. A name that does not resolve, or a network that is unreachable,
//     when the policy grants no network (or lists hosts without the one
//     named): the allow_net to add.
//  2. A path the server may not read or write (EACCES, EPERM, EROFS,
//     ENOENT, or "cannot access"): allow_write for a write (or a
//     read-only file system), allow_read otherwise. A path that does not
//     exist on this machine either is a path to fix, not to grant. The
//     path comes from text the plugin controls, so a grant that would give
//     it more than a server should have is never proposed: of /, the
//     home itself, a path in a dot-directory of the home (~/.ssh,
//     ~/.config, …) or one that is, holds or lies in one of plughost's own
//     directories (Failure.Own). Then the step only says what the server
//     reported, and to grant a narrower path if it needs one.
//  3. A variable the server requires: where to set it.
//  4. A start over its time limit: the limit to raise.
package diagnose

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Failure is what is known of a plugin's failure.
type Failure struct {
	// Plugin is the plugin's provider name, as the sandbox block names
	// it (plugin "NAME").
	Plugin string
	// Declared is true for a declared MCP server (NAME.mcp.json), whose
	// declaration can set variables itself.
	Declared bool
	// Error is the failure's text, Stderr the excerpt of the plugin's
	// stderr that goes with it.
	Error, Stderr string
	// Net is the policy's network mode: "" or "none", "all", or "list"
	// with NetAllow its "host:port" entries.
	Net      string
	NetAllow []string
	// URLs are the URLs the plugin was given (a declared server's
	// arguments and env values): when an error names a host but not its
	// port, as Node's and Go's resolver errors do, the port of a URL
	// naming that host (or its scheme's) is the one to grant, not 443.
	URLs []string
	// Exists, when not nil, reports whether a path exists on this machine
	// (outside the sandbox); nil assumes it does.
	Exists func(path string) bool
	// Home is the user's home directory ("" none known), and Own
	// plughost's own directories (configuration, state, data, cache): a
	// grant of /, Home, a path in a dot-directory of Home or a path
	// that is, holds or lies in one of Own is never proposed.
	Home string
	Own  []string
}

// NextStep returns the one next step for f, or "" when no rule knows one.
func NextStep(f Failure) string {
	text := f.Stderr + "\n" + f.Error
	for _, rule := range []func(Failure, string) string{network, path, variable, timeout} {
		if step := rule(f, text); step != "" {
			return step
		}
	}
	return ""
}

// inSandbox is where the plugin's own policy is set.
func (f Failure) inSandbox() string {
	return fmt.Sprintf("to plugin %q in the sandbox block", f.Plugin)
}

// netFailure matches the texts of a name that does not resolve or a
// network that cannot be reached: glibc's gai_strerror and errno texts,
// Go's net package, Node's (libuv) error codes, Python's socket.gaierror.
var netFailure = regexp.MustCompile(`(?i)EAI_AGAIN|ENOTFOUND|EAI_NONAME|EAI_FAIL|getaddrinfo|Temporary failure in name resolution|Name or service not known|nodename nor servname|no such host|server misbehaving|ENETUNREACH|network is unreachable|EHOSTUNREACH|no route to host|Failed to establish a new connection|Could not resolve host|Name does not resolve`)

// hostPatterns find the host a failed lookup or connection named, in
// Node's "getaddrinfo EAI_AGAIN HOST", Go's "lookup HOST on ADDR: ..." or
// "dial tcp: lookup HOST", curl's "Could not resolve host: HOST", and
// Python's "host='HOST', port=443".
var hostPatterns = []*regexp.Regexp{
	regexp.MustCompile(`getaddrinfo (?:EAI_AGAIN|ENOTFOUND|EAI_NONAME|EAI_FAIL) ([A-Za-z0-9.-]+)`),
	regexp.MustCompile(`\blookup ([A-Za-z0-9.-]+)(?: on |: )`),
	regexp.MustCompile(`Could not resolve host: ([A-Za-z0-9.-]+)`),
	regexp.MustCompile(`host='([A-Za-z0-9.-]+)'`),
}

// portPattern finds the port beside a Python host ("port=8443").
var portPattern = regexp.MustCompile(`host='[^']+', port=(\d+)`)

// network is rule 1.
func network(f Failure, text string) string {
	if !netFailure.MatchString(text) {
		return ""
	}
	host := ""
	for _, p := range hostPatterns {
		if m := p.FindStringSubmatch(text); m != nil && strings.Contains(m[1], ".") {
			host = strings.TrimSuffix(m[1], ".")
			break
		}
	}
	port := ""
	if m := portPattern.FindStringSubmatch(text); m != nil {
		port = m[1]
	} else if host != "" {
		port = urlPort(f.URLs, host)
	}
	if port == "" {
		port = "443"
	}
	switch f.Net {
	case "all":
		return "" // granted: not the sandbox's doing (issue of the resolver, or of the network itself)
	case "list":
		if host == "" || slices.ContainsFunc(f.NetAllow, func(e string) bool { return strings.HasPrefix(e, host+":") }) {
			return ""
		}
		return fmt.Sprintf("add %q to the allow_net list of plugin %q in the sandbox block (its network is limited to %s)",
			host+":"+port, f.Plugin, strings.Join(f.NetAllow, ", "))
	}
	if host != "" {
		return fmt.Sprintf("add allow_net = [%q] (or \"all\") %s: it has no network, and it tried to reach %s", host+":"+port, f.inSandbox(), host)
	}
	return fmt.Sprintf("add allow_net = \"all\" (or [\"HOST:443\"]) %s: it has no network, and it tried to use it", f.inSandbox())
}

// urlPort is the port of the first of urls naming host: its own, or its
// scheme's (80 for http and ws, 443 for https and wss); "" when none
// names host.
func urlPort(urls []string, host string) string {
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || !strings.EqualFold(strings.TrimSuffix(u.Hostname(), "."), host) {
			continue
		}
		if p := u.Port(); p != "" {
			return p
		}
		switch strings.ToLower(u.Scheme) {
		case "http", "ws":
			return "80"
		case "https", "wss":
			return "443"
		}
	}
	return ""
}

// A path failure: the error (errno name or text) and the path, in the
// shapes the runtimes print them.
var (
	// Node: "EACCES: permission denied, open '/srv/x'", "ENOENT: no such
	// file or directory, scandir '/srv/docs'".
	nodePath = regexp.MustCompile(`\b(EACCES|EPERM|EROFS|ENOENT)\b[^,\n]*, (\w+) '([^']+)'`)
	// Python: "PermissionError: [Errno 13] Permission denied: '/srv/x'".
	pyPath = regexp.MustCompile(`\[Errno (13|1|30|2)\] [^:\n]+: '([^']+)'`)
	// Go and C tools: "open /srv/x: permission denied", "mkdir /srv/x:
	// read-only file system", "cat: /srv/x: Permission denied", "ls:
	// cannot access '/srv/docs': No such file or directory".
	goPath = regexp.MustCompile(`(?i)(?:^|\s)(open|mkdir|stat|lstat|create|creat|remove|rename|write|read|opendir|chdir|cannot create|cannot access|cannot open|[\w.-]+:)\s+'?(/[^\s':]+)'?:\s*(permission denied|operation not permitted|read-only file system|no such file or directory)`)
	// Anything else that names a directory or file it cannot access:
	// "Cannot access directory /srv/docs", "Error accessing directory /srv/docs".
	loosePath = regexp.MustCompile(`(?i)(?:cannot access|cannot read|cannot open|error accessing|unable to access|failed to access|permission denied)[^/\n]*?(/[^\s'",:]+)`)
)

// writeOps are the operations (and errors) that need write access.
var writeOps = regexp.MustCompile(`(?i)^(mkdir|create|creat|cannot create|write|rename|remove|unlink|rmdir|symlink|link|copyfile|utime|chmod|EROFS|30)$|read-only file system`)

// path is rule 2.
func path(f Failure, text string) string {
	var op, p, errText string
	switch {
	case nodePath.MatchString(text):
		m := nodePath.FindStringSubmatch(text)
		errText, op, p = m[1], m[2], m[3]
	case pyPath.MatchString(text):
		m := pyPath.FindStringSubmatch(text)
		errText, p = m[1], m[2]
	case goPath.MatchString(text):
		m := goPath.FindStringSubmatch(text)
		op, p, errText = m[1], m[2], m[3]
	case loosePath.MatchString(text):
		p = loosePath.FindStringSubmatch(text)[1]
	default:
		return ""
	}
	p = strings.TrimRight(p, ".")
	if p == "" {
		return ""
	}
	p = filepath.Clean(p)
	reported := p
	write := writeOps.MatchString(op) || writeOps.MatchString(errText)
	exists := f.Exists == nil || f.Exists(p)
	if write && !exists {
		// A file to create: its directory is what must be granted.
		if dir := parent(p); f.Exists == nil || f.Exists(dir) {
			p = dir
			exists = true
		}
	}
	if !exists {
		return fmt.Sprintf("%s does not exist on this machine: create it, or fix the path the plugin is given", p)
	}
	if write {
		if !writeOps.MatchString(errText) && isFile(p) {
			p = parent(p) // a file written in place is often replaced by a rename
		}
		if f.guarded(p) {
			return fmt.Sprintf("the server reports it cannot write %s; grant a narrower path if it needs one", reported)
		}
		return fmt.Sprintf("add allow_write = [%q] %s", p, f.inSandbox())
	}
	if f.guarded(p) {
		return fmt.Sprintf("the server reports it cannot read %s; grant a narrower path if it needs one", reported)
	}
	return fmt.Sprintf("add allow_read = [%q] %s", p, f.inSandbox())
}

// guarded reports whether a grant of p (clean, absolute) must not be
// proposed: it is /, the home itself, lies in a dot-directory of the home,
// or is, holds or lies in one of plughost's own directories.
func (f Failure) guarded(p string) bool {
	within := func(a, b string) bool { return a == b || b == "/" || strings.HasPrefix(a, b+"/") } // a is b or under it
	if p == "/" || !filepath.IsAbs(p) {
		return true
	}
	if home := filepath.Clean(f.Home); f.Home != "" {
		if within(home, p) { // the home, or a directory holding it
			return true
		}
		if rest, ok := strings.CutPrefix(p, home+"/"); ok && strings.HasPrefix(rest, ".") {
			return true // ~/.ssh, ~/.config/…: keys and every program's configuration
		}
	}
	for _, d := range f.Own {
		if d = filepath.Clean(d); d != "" && filepath.IsAbs(d) && (within(d, p) || within(p, d)) {
			return true
		}
	}
	return false
}

// isFile guesses, from its name alone, that p names a file (it has an
// extension).
func isFile(p string) bool {
	base := p[strings.LastIndexByte(p, '/')+1:]
	return strings.Contains(strings.TrimPrefix(base, "."), ".")
}

func parent(p string) string {
	i := strings.LastIndexByte(strings.TrimRight(p, "/"), '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// varPatterns find a variable the server says it requires.
var varPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(?:environment variable|env var(?:iable)?|variable)s?:?\s+['"\x60]?([A-Z][A-Z0-9_]{2,})['"\x60]?\s+(?:is\s+)?(?:required|must be set|is not set|not set|missing|is missing|is empty)`),
	regexp.MustCompile(`(?i)(?:missing|required|set the|please set|no)\s+(?:required\s+)?(?:environment variable|env var(?:iable)?)s?:?\s+['"\x60]?([A-Z][A-Z0-9_]{2,})`),
	regexp.MustCompile(`\b([A-Z][A-Z0-9_]{2,})\s+(?:environment variable\s+)?(?:is required|must be set|is not set|not set|is missing)`),
	regexp.MustCompile(`KeyError: '([A-Z][A-Z0-9_]{2,})'`), // Python's os.environ["X"]
}

// variable is rule 3.
func variable(f Failure, text string) string {
	for _, p := range varPatterns {
		if m := p.FindStringSubmatch(text); m != nil {
			v := m[1]
			if f.Declared {
				return fmt.Sprintf("set %s: add \"%s\": \"…\" to the env of %s.mcp.json, or pass the host's with env = [%q] %s", v, v, f.Plugin, v, f.inSandbox())
			}
			return fmt.Sprintf("set %s on the host and pass it with env = [%q] %s", v, v, f.inSandbox())
		}
	}
	return ""
}

// timeoutPattern is the manager's error of a start over its limit.
var timeoutPattern = regexp.MustCompile(`within (\S+) \((start_timeout[^)]*)\)`)

// timeout is rule 4.
func timeout(f Failure, text string) string {
	m := timeoutPattern.FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	return fmt.Sprintf("if it is only slow to start (a first download, say), raise its limit of %s: start_timeout = \"2m\" in plugin %q of the plugins block", m[1], f.Plugin)
}
