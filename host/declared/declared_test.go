package declared

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/pluginproto"
)

func TestParseAccepts(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want Server
	}{
		{"stdio", `{"command":"node","args":["/opt/s.js","-v"],"env":{"LEVEL":"info"},"cwd":"/srv"}`,
			Server{Type: TypeStdio, Command: "node", Args: []string{"/opt/s.js", "-v"}, Env: map[string]string{"LEVEL": "info"}, Cwd: "/srv"}},
		{"stdio home cwd", `{"command":"/bin/srv","cwd":"${HOME}/data"}`,
			Server{Type: TypeStdio, Command: "/bin/srv", Cwd: "${HOME}/data"}},
		{"stdio tmpdir cwd", `{"command":"/bin/srv","cwd":"${TMPDIR}"}`,
			Server{Type: TypeStdio, Command: "/bin/srv", Cwd: "${TMPDIR}"}},
		{"stdio explicit", `{"type":"stdio","command":"srv"}`, Server{Type: TypeStdio, Command: "srv"}},
		{"http by url", `{"url":"https://mcp.example.com/mcp"}`, Server{Type: TypeHTTP, URL: "https://mcp.example.com/mcp"}},
		{"explicit http", `{"type":"http","url":"http://localhost:8080/mcp"}`, Server{Type: TypeHTTP, URL: "http://localhost:8080/mcp"}},
		{"sse", `{"type":"sse","url":"http://h/sse"}`, Server{Type: TypeSSE, URL: "http://h/sse"}},
		{"streamable-http", `{"type":"streamable-http","url":"http://h/mcp"}`, Server{Type: TypeHTTP, URL: "http://h/mcp"}},
		{"streamableHttp", `{"type":"streamableHttp","url":"http://h/mcp"}`, Server{Type: TypeHTTP, URL: "http://h/mcp"}},
		{"headers", `{"url":"https://h/mcp","headers":{"X-Key":"k","Authorization":"Bearer t"}}`,
			Server{Type: TypeHTTP, URL: "https://h/mcp", Headers: map[string]string{"X-Key": "k", "Authorization": "Bearer t"}}},
		{"env files", `{"command":"srv","env_files":{"API_KEY":"/run/secrets/k"},"env":{"LEVEL":"info"}}`,
			Server{Type: TypeStdio, Command: "srv", EnvFiles: map[string]string{"API_KEY": "/run/secrets/k"}, Env: map[string]string{"LEVEL": "info"}}},
		{"header files", `{"url":"https://h/mcp","header_files":{"X-API-Key":"/run/secrets/k"},"headers":{"X-Team":"core"}}`,
			Server{Type: TypeHTTP, URL: "https://h/mcp", HeaderFiles: map[string]string{"X-API-Key": "/run/secrets/k"}, Headers: map[string]string{"X-Team": "core"}}},
		{"token file", `{"url":"https://h/mcp","bearer_token_file":"/run/secrets/t"}`,
			Server{Type: TypeHTTP, URL: "https://h/mcp", BearerTokenFile: "/run/secrets/t"}},
		{"token env", `{"url":"https://h/mcp","bearer_token_env":"TOKEN","headers":{"X-Key":"k"}}`,
			Server{Type: TypeHTTP, URL: "https://h/mcp", BearerTokenEnv: "TOKEN", Headers: map[string]string{"X-Key": "k"}}},
		{"requests", `{"command":"srv","requests":{"read":["/srv/notes"],"write":["/var/lib/n"],"net":["api.acme.com:443","*"],"env":["ACME_TOKEN"]}}`,
			Server{Type: TypeStdio, Command: "srv", Requests: pluginproto.Requests{Read: []string{"/srv/notes"}, Write: []string{"/var/lib/n"},
				Net: []string{"api.acme.com:443", "*"}, Env: []string{"ACME_TOKEN"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(c.in))
			if err != nil {
				t.Fatalf("Parse(%s): %v", c.in, err)
			}
			if !reflect.DeepEqual(*s, c.want) {
				t.Fatalf("Parse(%s) = %+v, want %+v", c.in, *s, c.want)
			}
			if s.Remote() != (c.want.Type != TypeStdio) {
				t.Fatalf("Remote() = %v for type %s", s.Remote(), s.Type)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string // substrings of the error
	}{
		{"unknown member near miss", `{"comand":"srv"}`, []string{`unknown member "comand"`, `did you mean "command"?`}},
		{"unknown member far", `{"command":"srv","frobnicate":1}`, []string{`unknown member "frobnicate"`, "a declaration has: type, command"}},
		{"command and url", `{"command":"srv","url":"https://h/mcp"}`, []string{`a stdio server has no "url"`}},
		{"headers on stdio", `{"command":"srv","headers":{"A":"b"}}`, []string{`a stdio server has no`, `"headers"`}},
		{"token on stdio", `{"command":"srv","bearer_token_env":"T"}`, []string{`a stdio server has no`, "bearer token"}},
		{"stdio type without command", `{"type":"stdio","args":["x"]}`, []string{`a stdio server needs "command"`}},
		{"args on remote", `{"url":"https://h/mcp","args":["x"]}`, []string{`a remote server has no "command", "args"`}},
		{"env on remote", `{"url":"https://h/mcp","env":{"A":"b"}}`, []string{`a remote server has no`}},
		{"cwd on remote", `{"type":"sse","url":"https://h/mcp","cwd":"/x"}`, []string{`a remote server has no`}},
		{"ftp url", `{"url":"ftp://h/mcp"}`, []string{`url: "ftp://h/mcp" is not an http:// or https:// URL`}},
		{"url without host", `{"url":"https:///mcp"}`, []string{`is not an http:// or https:// URL`}},
		{"sse without url", `{"type":"sse"}`, []string{`url: "" is not`}},
		{"both token sources", `{"url":"https://h/mcp","bearer_token_file":"/f","bearer_token_env":"T"}`, []string{"bearer_token_file and bearer_token_env: give one"}},
		{"authorization and token", `{"url":"https://h/mcp","headers":{"authorization":"Bearer x"},"bearer_token_env":"T"}`, []string{`headers: "Authorization" and a bearer token`}},
		{"env file on remote", `{"url":"https://h/mcp","env_files":{"K":"/k"}}`, []string{`a remote server has no`}},
		{"env file relative", `{"command":"srv","env_files":{"K":"k"}}`, []string{`env_files: K: "k" is not an absolute path`}},
		{"env file and env", `{"command":"srv","env_files":{"K":"/k"},"env":{"K":"v"}}`, []string{`env and env_files both give K`}},
		{"env file bad name", `{"command":"srv","env_files":{"A=B":"/k"}}`, []string{`env_files: "A=B" is not a variable name`}},
		{"header file on stdio", `{"command":"srv","header_files":{"K":"/k"}}`, []string{`a stdio server has no`}},
		{"header file relative", `{"url":"https://h/mcp","header_files":{"K":"k"}}`, []string{`header_files: K: "k" is not an absolute path`}},
		{"header file and header", `{"url":"https://h/mcp","header_files":{"x-key":"/k"},"headers":{"X-Key":"v"}}`, []string{`headers and header_files both give "x-key"`}},
		{"header file authorization and token", `{"url":"https://h/mcp","header_files":{"Authorization":"/k"},"bearer_token_env":"T"}`, []string{`header_files: "Authorization" and a bearer token`}},
		{"header file bad name", `{"url":"https://h/mcp","header_files":{"X Key":"/k"}}`, []string{`header_files: "X Key" is not a header name`}},
		{"env name with =", `{"command":"srv","env":{"A=B":"c"}}`, []string{`env: "A=B" is not a variable name`}},
		{"empty env name", `{"command":"srv","env":{"":"c"}}`, []string{`env: "" is not a variable name`}},
		{"relative cwd", `{"command":"srv","cwd":"data"}`, []string{`cwd: "data" is not an absolute path`}},
		{"cwd glued to a variable", `{"command":"srv","cwd":"${HOME}data"}`, []string{`cwd: "${HOME}data" is not an absolute path`}},
		{"unknown type", `{"type":"websocket","url":"wss://h"}`, []string{`type: unknown transport "websocket"`}},
		{"neither", `{}`, []string{`neither "command"`, `nor "url"`}},
		{"array", `["srv"]`, []string{"not a JSON object"}},
		{"string", `"srv"`, []string{"not a JSON object"}},
		{"bad json", `{"command":`, []string{"not a JSON object"}},
		{"wrong member type", `{"command":["srv"]}`, []string{"command"}},
		{"relative requested path", `{"command":"srv","requests":{"read":["notes"]}}`, []string{`requests: "notes" is not an absolute path`}},
		{"requested net without port", `{"command":"srv","requests":{"net":["api.acme.com"]}}`, []string{`requests: net "api.acme.com" is not "host:port" or "*"`}},
		{"requested env with =", `{"command":"srv","requests":{"env":["A=B"]}}`, []string{`requests: env "A=B" is not a variable name`}},
		{"unknown request", `{"command":"srv","requests":{"exec":["/bin/sh"]}}`, []string{`unknown field "exec"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(c.in))
			if err == nil {
				t.Fatalf("Parse(%s) = %+v, want an error", c.in, s)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse(%s): error %q does not contain %q", c.in, err, w)
				}
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "a.mcp.json")
	if err := os.WriteFile(good, []byte(`{"command":"/bin/srv"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(good)
	if err != nil || s.Command != "/bin/srv" || s.Type != TypeStdio {
		t.Fatalf("Load(good) = %+v, %v", s, err)
	}

	// Exactly MaxSize is read; one byte more is refused before parsing.
	pad := func(n int) []byte {
		b := []byte(`{"command":"/bin/srv"}`)
		return append(b, []byte(strings.Repeat(" ", n-len(b)))...)
	}
	at := filepath.Join(dir, "at.mcp.json")
	if err := os.WriteFile(at, pad(MaxSize), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(at); err != nil {
		t.Fatalf("Load(MaxSize bytes): %v", err)
	}
	over := filepath.Join(dir, "over.mcp.json")
	if err := os.WriteFile(over, pad(MaxSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(over); err == nil || !strings.Contains(err.Error(), "over 65536 bytes") {
		t.Fatalf("Load(over MaxSize) = %v, want the size refused", err)
	}

	bad := filepath.Join(dir, "bad.mcp.json")
	if err := os.WriteFile(bad, []byte(`{"comand":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": ") || !strings.Contains(err.Error(), "did you mean") {
		t.Fatalf("Load(bad) = %v, want the path and the mistake", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.mcp.json")); !os.IsNotExist(err) {
		t.Fatalf("Load(missing) = %v, want not-exist", err)
	}
}

func TestToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  s3cret \n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TOKEN": "from-env"}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		name    string
		s       Server
		want    string
		wantErr string
	}{
		{"none", Server{Type: TypeHTTP, URL: "https://h"}, "", ""},
		{"file trimmed", Server{BearerTokenFile: file}, "s3cret", ""},
		{"empty file", Server{BearerTokenFile: empty}, "", "bearer_token_file: " + empty + " is empty"},
		{"missing file", Server{BearerTokenFile: filepath.Join(dir, "nope")}, "", "bearer_token_file: "},
		{"env", Server{BearerTokenEnv: "TOKEN"}, "from-env", ""},
		{"env unset", Server{BearerTokenEnv: "UNSET"}, "", "bearer_token_env: $UNSET is empty or unset"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.s.Token(getenv)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Token() = %q, %v; want error containing %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Token() = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestEnvList(t *testing.T) {
	s := Server{Env: map[string]string{"B": "2", "A": "1=x"}}
	if got, want := s.EnvList(), []string{"A=1=x", "B=2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("EnvList() = %q, want %q", got, want)
	}
}

func TestName(t *testing.T) {
	cases := []struct {
		base string
		name string
		ok   bool
	}{
		{"fs.mcp.json", "fs", true},
		{"my.server.mcp.json", "my.server", true},
		{".mcp.json", "", false},
		{"fs.json", "fs.json", false},
		{"fs.mcp.json.bak", "fs.mcp.json.bak", false},
		{"fs", "fs", false},
	}
	for _, c := range cases {
		if name, ok := Name(c.base); ok != c.ok || (ok && name != c.name) {
			t.Errorf("Name(%q) = %q, %v; want %q, %v", c.base, name, ok, c.name, c.ok)
		}
	}
}

// HeaderValues (and EnvValues alike) reads each file, trimmed, refusing a file open to
// others, an empty one and one of several lines; Headers stay as they are.
func TestHeaderValues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string]struct {
		path    string
		want    string
		wantErr string
	}{
		"trimmed":      {path: write("ok", "k-123\n", 0o600), want: "k-123"},
		"open":         {path: write("open", "k", 0o644), wantErr: "chmod 600"},
		"empty":        {path: write("empty", "\n", 0o600), wantErr: "is empty"},
		"two lines":    {path: write("two", "a\nb\n", 0o600), wantErr: "more than one line"},
		"missing file": {path: filepath.Join(dir, "none"), wantErr: "no such file"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := &Server{Headers: map[string]string{"X-Team": "core"}, HeaderFiles: map[string]string{"X-API-Key": c.path}}
			h, err := s.HeaderValues()
			e := &Server{Env: map[string]string{"X-Team": "core"}, EnvFiles: map[string]string{"X-API-Key": c.path}}
			if ev, eerr := e.EnvValues(); !cmp.Equal(ev, h) || (eerr == nil) != (err == nil) {
				t.Errorf("EnvValues() = %v, %v; HeaderValues() = %v, %v: want the same", ev, eerr, h, err)
			}
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "header_files: X-API-Key") {
					t.Fatalf("HeaderValues() = %v, %v; want an error with %q", h, err, c.wantErr)
				}
				return
			}
			if err != nil || h["X-API-Key"] != c.want || h["X-Team"] != "core" || len(s.Headers) != 1 {
				t.Fatalf("HeaderValues() = %v, %v; want X-API-Key %q and X-Team (Headers untouched: %v)", h, err, c.want, s.Headers)
			}
		})
	}
}
