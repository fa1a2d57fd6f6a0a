package importer

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
)

// fakeFS is the machine a test converts on: existing paths, true for a
// directory.
type fakeFS map[string]bool

func (f fakeFS) stat(p string) (isDir, ok bool) {
	isDir, ok = f[p]
	return isDir, ok
}

// machine holds a user's home with a Documents directory, a memory file,
// a credentials file, and system paths.
var machine = fakeFS{
	"/": true, "/home": true, "/home/me": true, "/home/me/Documents": true, "/home/me/memory.jsonl": false,
	"/home/me/creds.json": false, "/usr": true, "/usr/share/dict": true, "/opt/mcp/server.js": false,
	"/opt/lib/node_modules": true, "/home/me/.ssh": true, "/home/me/.config": true, "/home/me/.config/plughost": true,
	"/home/me/.local": true, "/home/me/.local/share/plughost/plugins": true, "/home/me/.ssh/keys": true, "/state": true,
	"/home/me/.config/editor": true, "/srv/plughost-state": true, "/srv": true,
}

// convertOne converts one entry on machine, with state dir /state.
func convertOne(t *testing.T, name, entry string) (*declared.Server, []Note, grants) {
	t.Helper()
	c := &converter{inputs: map[string]input{}, stateDir: "/state", home: "/home/me", own: ownDirs("/home/me", []string{"/state", "/srv/plughost-state"}),
		stat: machine.stat, head: func(string) string { return "" }}
	s, notes, g, err := c.convert(name, json.RawMessage(entry))
	if err != nil {
		t.Fatalf("convert(%s): %v", entry, err)
	}
	return s, notes, g
}

// The path rule (paths.go), one case per kind of path.
func TestPaths(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		entry       string
		args        []string
		env         map[string]string
		cwd         string
		read, write []string
		copies      []fileCopy
		notes       []string // substrings, in order of the notes of that kind
	}{
		"a directory argument is granted read-write": {
			entry: `{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","/home/me/Documents","--root=/home/me/Documents/"]}`,
			args:  []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/me/Documents", "--root=/home/me/Documents"},
			write: []string{"/home/me/Documents"},
			notes: []string{"granted: args[2] /home/me/Documents: read-write", "move it from allow_write to allow_read"},
		},
		"a system path is granted read-only": {
			entry: `{"command":"/usr/bin/srv","args":["--dict","/usr/share/dict"],"env":{"NODE_PATH":"/opt/lib/node_modules:/nowhere"}}`,
			args:  []string{"--dict", "/usr/share/dict"},
			env:   map[string]string{"NODE_PATH": "/opt/lib/node_modules:/nowhere"},
			read:  []string{"/usr/share/dict", "/opt/lib/node_modules"},
			notes: []string{"granted: args[1] /usr/share/dict: read-only (a system path)", "granted: env NODE_PATH: read-only: /opt/lib/node_modules"},
		},
		"an existing file in env is granted read-only": {
			entry: `{"command":"/usr/bin/srv","env":{"CREDENTIALS":"/home/me/creds.json"}}`,
			env:   map[string]string{"CREDENTIALS": "/home/me/creds.json"},
			read:  []string{"/home/me/creds.json"},
			notes: []string{"granted: env CREDENTIALS /home/me/creds.json: read-only (a file); if the server changes it, copy it into /state/plugins/srv/data"},
		},
		"the memory server's file is moved and copied": {
			entry:  `{"command":"npx","args":["-y","@modelcontextprotocol/server-memory@2026.8.31"],"env":{"MEMORY_FILE_PATH":"/home/me/memory.jsonl"}}`,
			args:   []string{"-y", "@modelcontextprotocol/server-memory@2026.8.31"},
			env:    map[string]string{"MEMORY_FILE_PATH": "${HOME}/memory.jsonl"},
			copies: []fileCopy{{"/home/me/memory.jsonl", "/state/plugins/srv/data/memory.jsonl"}},
			notes:  []string{"moved: env MEMORY_FILE_PATH /home/me/memory.jsonl is now ${HOME}/memory.jsonl, in the server's own data directory /state/plugins/srv/data", "import copied the file there"},
		},
		"the memory server by its path, with no file set, gets one in its HOME": {
			entry: `{"command":"node","args":["/opt/mcp/node_modules/@modelcontextprotocol/server-memory/dist/index.js"]}`,
			args:  []string{"/opt/mcp/node_modules/@modelcontextprotocol/server-memory/dist/index.js"},
			env:   map[string]string{"MEMORY_FILE_PATH": "${HOME}/memory.jsonl"},
			notes: []string{`moved: env MEMORY_FILE_PATH = "${HOME}/memory.jsonl", added`},
		},
		"a file in env to be created is moved, nothing copied": {
			entry: `{"command":"/usr/bin/srv","env":{"LOG_FILE":"/home/me/srv.log"}}`,
			env:   map[string]string{"LOG_FILE": "${HOME}/srv.log"},
			notes: []string{"moved: env LOG_FILE /home/me/srv.log is now ${HOME}/srv.log", "it does not exist yet: the server creates it there"},
		},
		"the sqlite server's database flag": {
			entry:  `{"command":"uvx","args":["mcp-server-sqlite","--db-path","/home/me/creds.json"]}`,
			args:   []string{"mcp-server-sqlite", "--db-path", "${HOME}/creds.json"},
			copies: []fileCopy{{"/home/me/creds.json", "/state/plugins/srv/data/creds.json"}},
			notes:  []string{"moved: args[2] /home/me/creds.json is now ${HOME}/creds.json"},
		},
		"the program an interpreter runs is not granted here": {
			entry: `{"command":"node","args":["/opt/mcp/server.js","/home/me/Documents"]}`,
			args:  []string{"/opt/mcp/server.js", "/home/me/Documents"},
			write: []string{"/home/me/Documents"},
			notes: []string{"granted: args[1] /home/me/Documents: read-write", "note: /opt/mcp/server.js is the program node runs"},
		},
		"what does not exist is said, not granted": {
			entry: `{"command":"/usr/bin/srv","args":["/srv/none"],"env":{"DB":"/nowhere/db"},"cwd":"/home/me/Documents"}`,
			args:  []string{"/srv/none"},
			env:   map[string]string{"DB": "/nowhere/db"},
			cwd:   "/home/me/Documents",
			write: []string{"/home/me/Documents"},
			notes: []string{"granted: cwd /home/me/Documents: read-write", "args[0] /srv/none does not exist here", "env DB /nowhere/db does not exist here"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, notes, g := convertOne(t, "srv", c.entry)
			if diff := cmp.Diff(c.args, s.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.env, s.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if s.Cwd != c.cwd {
				t.Errorf("cwd %q, want %q", s.Cwd, c.cwd)
			}
			if diff := cmp.Diff([][]string{c.read, c.write}, [][]string{g.read, g.write}); diff != "" {
				t.Errorf("[allow_read allow_write] (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.copies, g.copies, cmp.AllowUnexported(fileCopy{})); diff != "" {
				t.Errorf("copies (-want +got):\n%s", diff)
			}
			var text []string
			for _, n := range notes {
				text = append(text, n.Kind+": "+n.Text)
			}
			all := strings.Join(text, "\n")
			for _, w := range c.notes {
				if !strings.Contains(all, w) {
					t.Errorf("notes lack %q:\n%s", w, all)
				}
			}
			if _, err := config.Parse([]byte(Snippet([]Server{{Name: "srv", grants: g}})), "snippet.hcl"); err != nil {
				t.Errorf("its block does not parse: %v", err)
			}
		})
	}
}

// A directory that is /, the home, or holds or lies in plughost's own
// directories or a directory of keys is granted nothing: its grant is
// written commented out, with a decide: line saying why.
func TestPathsGuarded(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		dir, why string
	}{
		"/":                     {"/", "the whole filesystem"},
		"the home":              {"/home/me", "your whole home"},
		"the home, unclean":     {"/home/me/", "your whole home"},
		"~/.ssh":                {"/home/me/.ssh", "read your keys (/home/me/.ssh)"},
		"under ~/.ssh":          {"/home/me/.ssh/keys", "read your keys (/home/me/.ssh)"},
		"~/.config as a whole":  {"/home/me/.config", "plughost's own configuration or state (/home/me/.config/plughost)"},
		"plughost's config dir": {"/home/me/.config/plughost", "plughost's own configuration or state (/home/me/.config/plughost)"},
		"holds plughost's data": {"/home/me/.local", "plughost's own configuration or state (/home/me/.local/state/plughost)"},
		"the plugin directory":  {"/home/me/.local/share/plughost/plugins", "plughost's own configuration or state (/home/me/.local/share/plughost)"},
		"the state dir":         {"/state", "plughost's own configuration or state (/state)"},
		"holds a given own dir": {"/srv", "plughost's own configuration or state (/srv/plughost-state)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			entry := `{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem",` + strconv.Quote(c.dir) + `]}`
			_, notes, g := convertOne(t, "srv", entry)
			if len(g.write) != 0 || len(g.read) != 0 {
				t.Errorf("%s granted: allow_read %v allow_write %v, want nothing", c.dir, g.read, g.write)
			}
			var text []string
			for _, n := range notes {
				text = append(text, n.Kind+": "+n.Text)
			}
			all := strings.Join(text, "\n")
			clean := filepath.Clean(c.dir)
			if want := "decide: args[2] " + clean + ": NOT granted: "; !strings.Contains(all, want) || !strings.Contains(all, c.why) || !strings.Contains(all, "narrower directory") {
				t.Errorf("notes lack %q, %q and a narrower directory:\n%s", want, c.why, all)
			}
			snippet := Snippet([]Server{{Name: "srv", grants: g}})
			if want := "    # allow_write = [" + strconv.Quote(clean) + "] # decide: not granted: "; !strings.Contains(snippet, want) || !strings.Contains(snippet, c.why) {
				t.Errorf("snippet lacks %q (%s):\n%s", want, c.why, snippet)
			}
			if _, err := config.Parse([]byte(snippet), "snippet.hcl"); err != nil {
				t.Errorf("its block does not parse: %v", err)
			}
		})
	}
	// A directory beside them is still granted (one in ~/.config too: not
	// ~/.config as a whole).
	for _, dir := range []string{"/home/me/Documents", "/home/me/.config/editor"} {
		_, _, g := convertOne(t, "srv", `{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","`+dir+`"]}`)
		if !slices.Equal(g.write, []string{dir}) {
			t.Errorf("%s: allow_write %v, want [%s]", dir, g.write, dir)
		}
	}
}

// The network: none unless the server is known to call out.
func TestNetwork(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		entry string
		net   string
		note  string
	}{
		"npx, unknown":    {`{"command":"npx","args":["-y","@acme/notes-mcp"]}`, "", `no network: if it calls an outside API, add allow_net = ["HOST:443"]`},
		"npx, github":     {`{"command":"npx","args":["-y","@modelcontextprotocol/server-github"]}`, "all", `to narrow it: allow_net = ["api.github.com:443"]`},
		"uvx, fetch":      {`{"command":"uvx","args":["mcp-server-fetch"]}`, "all", "mcp-server-fetch calls outside services at run time"},
		"installed slack": {`{"command":"node","args":["/opt/x/node_modules/@modelcontextprotocol/server-slack/dist/index.js"]}`, "all", "slack.com:443"},
		"a binary":        {`{"command":"/usr/bin/srv"}`, "", "no network"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, notes, g := convertOne(t, "srv", c.entry)
			if g.net != c.net {
				t.Errorf("net %q, want %q", g.net, c.net)
			}
			if !slices.ContainsFunc(notes, func(n Note) bool { return strings.Contains(n.Text, c.note) }) {
				t.Errorf("no note with %q: %v", c.note, notes)
			}
		})
	}
}

// A remote server's literal secrets go to files its declaration names and
// its block grants; other headers stay.
func TestHeaders(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		headers     string
		want        declared.Server
		secrets     []secret
		unsupported bool
	}{
		"bearer": {`{"Authorization":"Bearer t-1"}`,
			declared.Server{BearerTokenFile: "/state/secrets/srv/bearer_token"}, []secret{{"/state/secrets/srv/bearer_token", "t-1"}}, false},
		"api key and a plain header": {`{"X-API-Key":"k-1","X-Team":"core"}`,
			declared.Server{Headers: map[string]string{"X-Team": "core"}, HeaderFiles: map[string]string{"X-API-Key": "/state/secrets/srv/x-api-key"}},
			[]secret{{"/state/secrets/srv/x-api-key", "k-1"}}, false},
		"basic authorization": {`{"Authorization":"Basic dXNlcjpwdw=="}`,
			declared.Server{HeaderFiles: map[string]string{"Authorization": "/state/secrets/srv/authorization"}},
			[]secret{{"/state/secrets/srv/authorization", "Basic dXNlcjpwdw=="}}, false},
		"env bearer": {`{"Authorization":"Bearer ${env:TOKEN}"}`, declared.Server{BearerTokenEnv: "TOKEN"}, nil, false},
		"an input":   {`{"X-Key":"${input:key}"}`, declared.Server{}, nil, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, notes, g := convertOne(t, "srv", `{"url":"https://h/mcp","headers":`+c.headers+`}`)
			c.want.URL = "https://h/mcp"
			if diff := cmp.Diff(&c.want, s); diff != "" {
				t.Errorf("declaration (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.secrets, g.secrets, cmp.AllowUnexported(secret{})); diff != "" {
				t.Errorf("secrets (-want +got):\n%s", diff)
			}
			for _, sec := range g.secrets {
				if !slices.Contains(g.read, sec.path) {
					t.Errorf("%s not granted: allow_read %v", sec.path, g.read)
				}
			}
			if got := slices.ContainsFunc(notes, func(n Note) bool { return n.Kind == NotCarried }); got != c.unsupported {
				t.Errorf("not carried: %v, want %v (%v)", got, c.unsupported, notes)
			}
		})
	}
}

// A stdio server's literal secret env goes to a file its declaration
// names in env_files and its block grants; a path, a multi-line value and
// another variable stay in env.
func TestEnvSecrets(t *testing.T) {
	t.Parallel()
	s, notes, g := convertOne(t, "srv", `{"command":"/usr/bin/srv","env":{"API_KEY":"k-1 ","GOOGLE_APPLICATION_CREDENTIALS":"/home/me/creds.json",
  "PRIVATE_KEY":"-----BEGIN\nx\n-----END","LEVEL":"info"}}`)
	want := &declared.Server{Command: "/usr/bin/srv", EnvFiles: map[string]string{"API_KEY": "/state/secrets/srv/api_key"},
		Env: map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": "/home/me/creds.json", "PRIVATE_KEY": "-----BEGIN\nx\n-----END", "LEVEL": "info"}}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("declaration (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]secret{{"/state/secrets/srv/api_key", "k-1"}}, g.secrets, cmp.AllowUnexported(secret{})); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/state/secrets/srv/api_key", "/home/me/creds.json"}, g.read); diff != "" {
		t.Errorf("allow_read (-want +got):\n%s", diff)
	}
	var secrets []string
	for _, n := range notes {
		if n.Kind == WarnSecret {
			secrets = append(secrets, n.Text)
		}
	}
	if len(secrets) != 2 || !strings.Contains(secrets[0], "env API_KEY: its value is now in /state/secrets/srv/api_key") ||
		!strings.Contains(secrets[1], "env PRIVATE_KEY holds a secret, now in the declaration") {
		t.Errorf("secret notes: %q", secrets)
	}
}

// packageOf finds the package from a launcher or a node_modules path.
func TestPackageOf(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		pkg  string
		args []string
		want string
	}{
		"launcher":      {"@scope/pkg@1.2", nil, "@scope/pkg"},
		"pypi":          {"mcp-server-fetch==1.0", nil, "mcp-server-fetch"},
		"scoped path":   {"", []string{"/opt/node_modules/@scope/pkg/dist/index.js"}, "@scope/pkg"},
		"innermost":     {"", []string{"/a/node_modules/x/node_modules/y/index.js"}, "y"},
		"plain path":    {"", []string{"/opt/server.js"}, ""},
		"unscoped path": {"", []string{"/x/node_modules/mcp-server/bin/cli.js"}, "mcp-server"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := packageOf(c.pkg, c.args); got != c.want {
				t.Errorf("packageOf(%q, %q) = %q, want %q", c.pkg, c.args, got, c.want)
			}
		})
	}
}

// MergeConfig keeps everything of the file, adds into its sandbox block,
// keeps or replaces a plugin's block, and refuses a file that does not
// parse.
func TestMergeConfig(t *testing.T) {
	t.Parallel()
	block := func(name, body string) Block {
		return Block{Name: name, Text: "  plugin \"" + name + "\" {\n" + body + "  }\n", Plugin: true}
	}
	memory := block("memory", "    runtime = \"node\"\n")
	cases := map[string]struct {
		src     string
		blocks  []Block
		replace bool
		want    string // the result, "" for an error
		kept    []string
		wantErr string
	}{
		"a new file": {src: "", blocks: []Block{memory},
			want: snippetHeader + "sandbox {\n  plugin \"memory\" {\n    runtime = \"node\"\n  }\n}\n"},
		"no sandbox block": {src: "# mine\nplugins {\n  start = \"lazy\"\n}", blocks: []Block{memory},
			want: "# mine\nplugins {\n  start = \"lazy\"\n}\n\n" + snippetHeader + "sandbox {\n  plugin \"memory\" {\n    runtime = \"node\"\n  }\n}\n"},
		"into the sandbox block": {src: "sandbox {\n  memory = \"1GiB\" # all\n  plugin \"echo\" {\n    pids = 8\n  }\n}\n# end\n", blocks: []Block{memory},
			want: "sandbox {\n  memory = \"1GiB\" # all\n  plugin \"echo\" {\n    pids = 8\n  }\n  plugin \"memory\" {\n    runtime = \"node\"\n  }\n}\n# end\n"},
		"an empty one-line block": {src: "sandbox {}\n", blocks: []Block{memory},
			want: "sandbox {\n  plugin \"memory\" {\n    runtime = \"node\"\n  }\n}\n"},
		"a block kept": {src: "sandbox {\n  plugin \"memory\" {\n    pids = 8\n  }\n}\n", blocks: []Block{memory, block("b", "")},
			want: "sandbox {\n  plugin \"memory\" {\n    pids = 8\n  }\n  plugin \"b\" {\n  }\n}\n", kept: []string{"memory"}},
		"a block replaced": {src: "sandbox {\n  plugin \"memory\" {\n    pids = 8\n  }\n  plugin \"echo\" {}\n}\n", blocks: []Block{memory}, replace: true,
			want: "sandbox {\n  plugin \"memory\" {\n    runtime = \"node\"\n  }\n  plugin \"echo\" {}\n}\n"},
		"a comment where a block is": {src: "sandbox {\n  plugin \"r\" {}\n}\n", blocks: []Block{{Name: "r", Text: "  # plugin \"r\": remote\n"}},
			want: "sandbox {\n  plugin \"r\" {}\n}\n"},
		"a comment said already": {src: "sandbox {\n  # plugin \"r\": remote\n}\n", blocks: []Block{{Name: "r", Text: "  # plugin \"r\": remote\n"}},
			want: "sandbox {\n  # plugin \"r\": remote\n}\n"},
		"a file that does not parse": {src: "sandbox {\n  bogus = 1\n}\n", blocks: []Block{memory}, wantErr: "does not parse, so import leaves it as it is"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, kept, err := MergeConfig([]byte(c.src), filepath.Join("/etc", "plughost.hcl"), c.blocks, c.replace)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("MergeConfig: %v, want an error with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, string(out)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.kept, kept); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
		})
	}
}
