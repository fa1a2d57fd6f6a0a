package declared

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plughost/plughost/sandbox"
)

// TestGranted: a declaration's secret sources are read only when the
// server's policy grants them (env for a variable, allow_read, allow_write
// or a named directory for a file, where a link leads); the first one it
// does not grant is reported with the grant to add.
func TestGranted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	if err := os.Mkdir(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(secrets, "token")
	if err := os.WriteFile(token, []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(token, link); err != nil {
		t.Fatal(err)
	}
	remote := func(o func(*Server)) *Server {
		s := &Server{Type: "http", URL: "https://api.example.com/mcp"}
		o(s)
		return s
	}
	tests := map[string]struct {
		s          *Server
		pol        sandbox.Policy
		member     string // of the source not granted; "" when all are
		grant      string
		pathInText string
	}{
		"nothing to grant": {s: remote(func(*Server) {})},
		"variable granted": {s: remote(func(s *Server) { s.BearerTokenEnv = "API_TOKEN" }), pol: sandbox.Policy{Env: []string{"API_TOKEN"}}},
		"variable not granted": {s: remote(func(s *Server) { s.BearerTokenEnv = "API_TOKEN" }),
			member: "bearer_token_env", grant: `env = ["API_TOKEN"]`},
		"file granted by its directory": {s: remote(func(s *Server) { s.BearerTokenFile = token }), pol: sandbox.Policy{AllowRead: []string{secrets}}},
		"file granted writable":         {s: remote(func(s *Server) { s.BearerTokenFile = token }), pol: sandbox.Policy{AllowWrite: []string{secrets}}},
		"file granted as a named dir": {s: remote(func(s *Server) { s.BearerTokenFile = token }),
			pol: sandbox.Policy{Dirs: []sandbox.Dir{{Name: "s", Path: secrets}}}},
		"file not granted": {s: remote(func(s *Server) { s.BearerTokenFile = token }),
			member: "bearer_token_file", grant: `allow_read = ["` + token + `"]`},
		"a link is judged where it leads": {s: remote(func(s *Server) { s.BearerTokenFile = link }), pol: sandbox.Policy{AllowRead: []string{dir + "/link"}},
			member: "bearer_token_file", grant: `allow_read = ["` + token + `"]`, pathInText: token},
		"the first ungranted in order": {s: remote(func(s *Server) {
			s.BearerTokenEnv = "OK"
			s.HeaderFiles = map[string]string{"X-B": token, "X-A": token}
		}), pol: sandbox.Policy{Env: []string{"OK"}}, member: "header_files: X-A", grant: `allow_read = ["` + token + `"]`},
		"env_files of a stdio server": {s: &Server{Command: "srv", EnvFiles: map[string]string{"KEY": token}},
			member: "env_files: KEY", grant: `allow_read = ["` + token + `"]`},
	}
	for name, tc := range tests {
		err := tc.s.Granted(&tc.pol, "notes")
		if tc.member == "" {
			if err != nil {
				t.Errorf("%s: %v, want it granted", name, err)
			}
			continue
		}
		var ue *UngrantedError
		if !errors.As(err, &ue) {
			t.Errorf("%s: %v, want an *UngrantedError", name, err)
			continue
		}
		if ue.Source.Member != tc.member || ue.Grant != tc.grant || ue.Block != `sandbox { plugin "notes" { ... } }` {
			t.Errorf("%s: %+v, want member %q, grant %q", name, ue, tc.member, tc.grant)
		}
		if tc.pathInText != "" && !strings.Contains(err.Error(), tc.pathInText) {
			t.Errorf("%s: %q does not name %s", name, err, tc.pathInText)
		}
	}
}
