package diagnose

import (
	"testing"
)

// The stderr texts below are real: printed by node 20, Python 3, Go,
// glibc's tools and npm on this kind of machine (those of name resolution
// in a network namespace of their own, as a sandboxed server has), or
// quoted from the MCP servers people run.
func TestNextStep(t *testing.T) {
	t.Parallel()
	exists := func(p string) bool {
		switch p {
		case "/srv/docs", "/srv/docs/index.md", "/home/me", "/home/me/memory.jsonl", "/var/lib", "/proc/1/mem", "/srv":
			return true
		}
		return false
	}
	tests := map[string]struct {
		f    Failure
		want string
	}{
		"node getaddrinfo, no network": {
			Failure{Plugin: "memory", Declared: true, Error: "exited while starting: exit status 1",
				Stderr: "Error: getaddrinfo EAI_AGAIN registry.npmjs.org"},
			`add allow_net = ["registry.npmjs.org:443"] (or "all") to plugin "memory" in the sandbox block: it has no network, and it tried to reach registry.npmjs.org`,
		},
		"npm's own log, no network": {
			Failure{Plugin: "fs", Stderr: "npm error code EAI_AGAIN\nnpm error syscall getaddrinfo\nnpm error errno EAI_AGAIN\nnpm error request to https://registry.npmjs.org/@modelcontextprotocol%2fserver-filesystem failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org",
				Net: "none"},
			`add allow_net = ["registry.npmjs.org:443"] (or "all") to plugin "fs" in the sandbox block: it has no network, and it tried to reach registry.npmjs.org`,
		},
		"node ENOTFOUND": {
			Failure{Plugin: "gh", Stderr: "FetchError: request to https://api.github.com/user failed, reason: getaddrinfo ENOTFOUND api.github.com"},
			`add allow_net = ["api.github.com:443"] (or "all") to plugin "gh" in the sandbox block: it has no network, and it tried to reach api.github.com`,
		},
		"go lookup": {
			Failure{Plugin: "gh", Stderr: `Get "https://api.github.com/user": dial tcp: lookup api.github.com on 10.255.255.53:53: dial udp 10.255.255.53:53: connect: network is unreachable`},
			`add allow_net = ["api.github.com:443"] (or "all") to plugin "gh" in the sandbox block: it has no network, and it tried to reach api.github.com`,
		},
		"go no such host": {
			Failure{Plugin: "gh", Stderr: `dial tcp: lookup api.github.com: no such host`},
			`add allow_net = ["api.github.com:443"] (or "all") to plugin "gh" in the sandbox block: it has no network, and it tried to reach api.github.com`,
		},
		"python requests names the host and port": {
			Failure{Plugin: "py", Stderr: `requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.example.com', port=8443): Max retries exceeded with url: /v1 (Caused by NameResolutionError("<urllib3.connection.HTTPSConnection object at 0x7f>: Failed to resolve 'api.example.com' ([Errno -3] Temporary failure in name resolution)"))`},
			`add allow_net = ["api.example.com:8443"] (or "all") to plugin "py" in the sandbox block: it has no network, and it tried to reach api.example.com`,
		},
		"node getaddrinfo, the port of the URL it was given": {
			Failure{Plugin: "fetch", Error: "EAI_AGAIN: getaddrinfo EAI_AGAIN some.test.name",
				URLs: []string{"http://registry.test:4873/", "https://Some.Test.Name:8443/page"}},
			`add allow_net = ["some.test.name:8443"] (or "all") to plugin "fetch" in the sandbox block: it has no network, and it tried to reach some.test.name`,
		},
		"go lookup, a plain http URL": {
			Failure{Plugin: "ollama", Stderr: `Post "http://ollama.lan/api/chat": dial tcp: lookup ollama.lan: no such host`,
				URLs: []string{"http://ollama.lan/api"}},
			`add allow_net = ["ollama.lan:80"] (or "all") to plugin "ollama" in the sandbox block: it has no network, and it tried to reach ollama.lan`,
		},
		"a URL naming another host: 443": {
			Failure{Plugin: "gh", Stderr: "getaddrinfo ENOTFOUND api.github.com", URLs: []string{"http://localhost:8080/"}},
			`add allow_net = ["api.github.com:443"] (or "all") to plugin "gh" in the sandbox block: it has no network, and it tried to reach api.github.com`,
		},
		"python socket, no host named": {
			Failure{Plugin: "py", Stderr: "socket.gaierror: [Errno -3] Temporary failure in name resolution"},
			`add allow_net = "all" (or ["HOST:443"]) to plugin "py" in the sandbox block: it has no network, and it tried to use it`,
		},
		"curl": {
			Failure{Plugin: "sh", Stderr: "curl: (6) Could not resolve host: example.com"},
			`add allow_net = ["example.com:443"] (or "all") to plugin "sh" in the sandbox block: it has no network, and it tried to reach example.com`,
		},
		"network granted: not the sandbox's doing": {
			Failure{Plugin: "memory", Stderr: "Error: getaddrinfo EAI_AGAIN registry.npmjs.org", Net: "all"},
			"",
		},
		"host missing from the list": {
			Failure{Plugin: "gh", Stderr: "Error: getaddrinfo EAI_AGAIN uploads.github.com", Net: "list", NetAllow: []string{"api.github.com:443"}},
			`add "uploads.github.com:443" to the allow_net list of plugin "gh" in the sandbox block (its network is limited to api.github.com:443)`,
		},
		"host in the list": {
			Failure{Plugin: "gh", Stderr: "Error: getaddrinfo EAI_AGAIN api.github.com", Net: "list", NetAllow: []string{"api.github.com:443"}},
			"",
		},
		"the issue's server": {
			Failure{Plugin: "docs", Declared: true, Error: "exited while starting: exit status 1", Stderr: "Cannot access directory /srv/docs", Exists: exists},
			`add allow_read = ["/srv/docs"] to plugin "docs" in the sandbox block`,
		},
		"node scandir ENOENT of a hidden directory": {
			Failure{Plugin: "fs", Stderr: "Error: ENOENT: no such file or directory, scandir '/srv/docs'", Exists: exists},
			`add allow_read = ["/srv/docs"] to plugin "fs" in the sandbox block`,
		},
		"node ENOENT of a path that is nowhere": {
			Failure{Plugin: "fs", Stderr: "Error: ENOENT: no such file or directory, scandir '/nonexist/docs'", Exists: exists},
			"/nonexist/docs does not exist on this machine: create it, or fix the path the plugin is given",
		},
		"node EACCES read": {
			Failure{Plugin: "fs", Stderr: "Error: EACCES: permission denied, open '/srv/docs/index.md'", Exists: exists},
			`add allow_read = ["/srv/docs/index.md"] to plugin "fs" in the sandbox block`,
		},
		"node EROFS: the memory server's file": {
			Failure{Plugin: "memory", Stderr: "Error: EROFS: read-only file system, open '/home/me/memory.jsonl'", Exists: exists},
			`add allow_write = ["/home/me/memory.jsonl"] to plugin "memory" in the sandbox block`,
		},
		"node mkdir EACCES": {
			Failure{Plugin: "fs", Stderr: "Error: EACCES: permission denied, mkdir '/srv/docs'", Exists: exists},
			`add allow_write = ["/srv/docs"] to plugin "fs" in the sandbox block`,
		},
		"python PermissionError": {
			Failure{Plugin: "py", Stderr: "PermissionError: [Errno 13] Permission denied: '/proc/1/mem'", Exists: exists},
			`add allow_read = ["/proc/1/mem"] to plugin "py" in the sandbox block`,
		},
		"python read-only file system": {
			Failure{Plugin: "py", Stderr: "OSError: [Errno 30] Read-only file system: '/home/me/memory.jsonl'", Exists: exists},
			`add allow_write = ["/home/me/memory.jsonl"] to plugin "py" in the sandbox block`,
		},
		"go open of a hidden file": {
			Failure{Plugin: "tp", Error: "exited: exit status 1", Stderr: "open /srv/docs/index.md: permission denied", Exists: exists},
			`add allow_read = ["/srv/docs/index.md"] to plugin "tp" in the sandbox block`,
		},
		"go mkdir on a read-only file system": {
			Failure{Plugin: "tp", Stderr: "mkdir /var/lib: read-only file system", Exists: exists},
			`add allow_write = ["/var/lib"] to plugin "tp" in the sandbox block`,
		},
		"go write of a new file": {
			Failure{Plugin: "tp", Stderr: "open /srv/out.json: read-only file system", Exists: exists},
			`add allow_write = ["/srv"] to plugin "tp" in the sandbox block`,
		},
		"ls": {
			Failure{Plugin: "sh", Stderr: "ls: cannot access '/srv/docs': No such file or directory", Exists: exists},
			`add allow_read = ["/srv/docs"] to plugin "sh" in the sandbox block`,
		},
		"dash cannot create": {
			Failure{Plugin: "sh", Stderr: "sh: 1: cannot create /srv/out.txt: Read-only file system", Exists: exists},
			`add allow_write = ["/srv"] to plugin "sh" in the sandbox block`,
		},
		"a required variable, node": {
			Failure{Plugin: "brave", Declared: true, Stderr: "Error: BRAVE_API_KEY environment variable is required"},
			`set BRAVE_API_KEY: add "BRAVE_API_KEY": "…" to the env of brave.mcp.json, or pass the host's with env = ["BRAVE_API_KEY"] to plugin "brave" in the sandbox block`,
		},
		"a required variable, go": {
			Failure{Plugin: "gh", Stderr: "environment variable GITHUB_PERSONAL_ACCESS_TOKEN is not set"},
			`set GITHUB_PERSONAL_ACCESS_TOKEN on the host and pass it with env = ["GITHUB_PERSONAL_ACCESS_TOKEN"] to plugin "gh" in the sandbox block`,
		},
		"a required variable, python": {
			Failure{Plugin: "slack", Declared: true, Stderr: "Traceback (most recent call last):\n  File \"/app/server.py\", line 3, in <module>\n    token = os.environ[\"SLACK_BOT_TOKEN\"]\n  File \"<frozen os>\", line 714, in __getitem__\nKeyError: 'SLACK_BOT_TOKEN'"},
			`set SLACK_BOT_TOKEN: add "SLACK_BOT_TOKEN": "…" to the env of slack.mcp.json, or pass the host's with env = ["SLACK_BOT_TOKEN"] to plugin "slack" in the sandbox block`,
		},
		"missing variable phrase": {
			Failure{Plugin: "x", Stderr: "Missing required environment variable: OPENAI_API_KEY"},
			`set OPENAI_API_KEY on the host and pass it with env = ["OPENAI_API_KEY"] to plugin "x" in the sandbox block`,
		},
		"start over its limit": {
			Failure{Plugin: "memory", Declared: true, Error: "the server did not answer initialize and list what it offers within 10s (start_timeout in the plugins block)"},
			`if it is only slow to start (a first download, say), raise its limit of 10s: start_timeout = "2m" in plugin "memory" of the plugins block`,
		},
		"network wins over the timeout": {
			Failure{Plugin: "memory", Error: "the server did not answer initialize and list what it offers within 10s (start_timeout in the plugins block)",
				Stderr: "npm error getaddrinfo EAI_AGAIN registry.npmjs.org"},
			`add allow_net = ["registry.npmjs.org:443"] (or "all") to plugin "memory" in the sandbox block: it has no network, and it tried to reach registry.npmjs.org`,
		},
		"nothing known": {
			Failure{Plugin: "tp", Error: "exited: exit status 3", Stderr: "panic: boom"},
			"",
		},
		"a go-plugin handshake failure": {
			Failure{Plugin: "junk", Error: "start: Unrecognized remote plugin message: hello\n(/p/junk must be a plughost plugin built for linux/amd64, and must print nothing to stdout before the go-plugin handshake)"},
			"",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := NextStep(tc.f); got != tc.want {
				t.Errorf("NextStep =\n  %s\nwant\n  %s", got, tc.want)
			}
		})
	}
}

// The path of a path failure comes from text the plugin controls (its
// stderr, its tool results): a grant of /, the home, a dot-directory of
// the home or plughost's own directories is never proposed; the step
// says what the server reported instead.
func TestNextStepProposesNoWideGrant(t *testing.T) {
	t.Parallel()
	exists := func(p string) bool {
		switch p {
		case "/", "/home", "/home/me", "/home/me/.ssh", "/home/me/.ssh/id_ed25519", "/home/me/.config", "/home/me/.config/plughost",
			"/home/me/.config/plughost/plughost.hcl", "/srv", "/srv/plughost", "/srv/plughost/state", "/srv/plughost/state/trust.json", "/home/me/notes.txt", "/home/me/Documents":
			return true
		}
		return false
	}
	own := []string{"/srv/plughost/state", "/home/me/.local/share/plughost"}
	tests := map[string]struct {
		stderr, want string
	}{
		"a key, by node": {
			"Error: EACCES: permission denied, open '/home/me/.ssh/id_ed25519'",
			"the server reports it cannot read /home/me/.ssh/id_ed25519; grant a narrower path if it needs one",
		},
		"a key, by a path with ..": {
			"open /home/me/Documents/../.ssh/id_ed25519: permission denied",
			"the server reports it cannot read /home/me/.ssh/id_ed25519; grant a narrower path if it needs one",
		},
		"a key, by python": {
			"PermissionError: [Errno 13] Permission denied: '/home/me/.ssh/id_ed25519'",
			"the server reports it cannot read /home/me/.ssh/id_ed25519; grant a narrower path if it needs one",
		},
		"a directory to create in /": {
			"mkdir /foo: read-only file system",
			"the server reports it cannot write /foo; grant a narrower path if it needs one",
		},
		"/ itself": {
			"Error: EACCES: permission denied, scandir '/'",
			"the server reports it cannot read /; grant a narrower path if it needs one",
		},
		"the home itself": {
			"Error: EACCES: permission denied, scandir '/home/me'",
			"the server reports it cannot read /home/me; grant a narrower path if it needs one",
		},
		"a directory holding the home": {
			"ls: cannot access '/home': Permission denied",
			"the server reports it cannot read /home; grant a narrower path if it needs one",
		},
		"a file to create in the home": {
			"open /home/me/new.txt: read-only file system",
			"the server reports it cannot write /home/me/new.txt; grant a narrower path if it needs one",
		},
		"a file written in place in the home": {
			"Error: EACCES: permission denied, open '/home/me/notes.txt'",
			`add allow_read = ["/home/me/notes.txt"] to plugin "fs" in the sandbox block`,
		},
		"plughost's configuration": {
			"Error: EROFS: read-only file system, open '/home/me/.config/plughost/plughost.hcl'",
			"the server reports it cannot write /home/me/.config/plughost/plughost.hcl; grant a narrower path if it needs one",
		},
		"plughost's state dir": {
			"Error: EACCES: permission denied, open '/srv/plughost/state/trust.json'",
			"the server reports it cannot read /srv/plughost/state/trust.json; grant a narrower path if it needs one",
		},
		"a directory holding plughost's state": {
			"Error: EACCES: permission denied, scandir '/srv/plughost'",
			"the server reports it cannot read /srv/plughost; grant a narrower path if it needs one",
		},
		"a directory beside them is still proposed": {
			"Error: EACCES: permission denied, scandir '/home/me/Documents'",
			`add allow_read = ["/home/me/Documents"] to plugin "fs" in the sandbox block`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := NextStep(Failure{Plugin: "fs", Stderr: tt.stderr, Exists: exists, Home: "/home/me", Own: own})
			if got != tt.want {
				t.Errorf("NextStep(%q)\n got %s\nwant %s", tt.stderr, got, tt.want)
			}
		})
	}
}
