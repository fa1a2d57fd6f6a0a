package declared

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseOAuth(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		in   string
		want OAuth
	}{
		"login, registered on the spot": {`{"url":"https://h/mcp","oauth":{}}`, OAuth{Grant: GrantLogin}},
		"login, pre-registered client": {`{"url":"https://h/mcp","oauth":{"client_id":"ph","client_secret_file":"/run/s","redirect_port":8765}}`,
			OAuth{Grant: GrantLogin, ClientID: "ph", ClientSecretFile: "/run/s", RedirectPort: 8765}},
		"login, public pre-registered client": {`{"url":"https://h/mcp","oauth":{"client_id":"ph"}}`, OAuth{Grant: GrantLogin, ClientID: "ph"}},
		"login, metadata document": {`{"url":"https://h/mcp","oauth":{"client_metadata_url":"https://me.example/plughost.json","scopes":["a:b","offline_access"]}}`,
			OAuth{Grant: GrantLogin, ClientMetadataURL: "https://me.example/plughost.json", Scopes: []string{"a:b", "offline_access"}}},
		"client credentials": {`{"type":"sse","url":"https://h/sse","oauth":{"grant":"client_credentials","client_id":"svc","client_secret_env":"SVC"}}`,
			OAuth{Grant: GrantClientCredentials, ClientID: "svc", ClientSecretEnv: "SVC"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse([]byte(c.in))
			if err != nil {
				t.Fatalf("Parse(%s): %v", c.in, err)
			}
			if s.OAuth == nil || !reflect.DeepEqual(*s.OAuth, c.want) {
				t.Fatalf("Parse(%s).OAuth = %+v, want %+v", c.in, s.OAuth, c.want)
			}
		})
	}
}

func TestParseOAuthRefuses(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		in   string
		want []string // substrings of the error
	}{
		"near miss":              {`{"url":"https://h/mcp","oauth":{"client_secert_file":"/s"}}`, []string{`oauth: unknown member "client_secert_file"`, `did you mean "client_secret_file"?`}},
		"far miss":               {`{"url":"https://h/mcp","oauth":{"password":"x"}}`, []string{`oauth: unknown member "password"`, "oauth has: grant, client_id"}},
		"not an object":          {`{"url":"https://h/mcp","oauth":"login"}`, []string{"oauth: not a JSON object"}},
		"unknown grant":          {`{"url":"https://h/mcp","oauth":{"grant":"password"}}`, []string{`oauth: grant: unknown grant "password"`, `"authorization_code" or "client_credentials"`}},
		"credentials, no id":     {`{"url":"https://h/mcp","oauth":{"grant":"client_credentials","client_secret_env":"S"}}`, []string{`grant "client_credentials" needs "client_id" and its secret`}},
		"credentials, no secret": {`{"url":"https://h/mcp","oauth":{"grant":"client_credentials","client_id":"svc"}}`, []string{`needs "client_id" and its secret`}},
		"credentials, browser":   {`{"url":"https://h/mcp","oauth":{"grant":"client_credentials","client_id":"s","client_secret_env":"S","redirect_port":1}}`, []string{`"redirect_port" are a login's`}},
		"two secret sources":     {`{"url":"https://h/mcp","oauth":{"client_id":"c","client_secret_file":"/s","client_secret_env":"S"}}`, []string{"client_secret_file and client_secret_env: give one"}},
		"secret without id":      {`{"url":"https://h/mcp","oauth":{"client_secret_env":"S"}}`, []string{`a client secret without "client_id"`}},
		"relative secret file":   {`{"url":"https://h/mcp","oauth":{"client_id":"c","client_secret_file":"secret"}}`, []string{`client_secret_file: "secret" is not an absolute path`}},
		"secret env with =":      {`{"url":"https://h/mcp","oauth":{"client_id":"c","client_secret_env":"A=B"}}`, []string{`client_secret_env: "A=B" is not a variable name`}},
		"http metadata URL":      {`{"url":"https://h/mcp","oauth":{"client_metadata_url":"http://me.example/c.json"}}`, []string{`client_metadata_url: "http://me.example/c.json" is not an https URL with a path`}},
		"root metadata URL":      {`{"url":"https://h/mcp","oauth":{"client_metadata_url":"https://me.example/"}}`, []string{"is not an https URL with a path"}},
		"scope with space":       {`{"url":"https://h/mcp","oauth":{"scopes":["a b"]}}`, []string{`oauth: scopes: "a b" is not a scope`}},
		"empty scope":            {`{"url":"https://h/mcp","oauth":{"scopes":[""]}}`, []string{`oauth: scopes: "" is not a scope`}},
		"port out of range":      {`{"url":"https://h/mcp","oauth":{"redirect_port":70000}}`, []string{"oauth: redirect_port: 70000 is not a port"}},
		"and a bearer token":     {`{"url":"https://h/mcp","bearer_token_env":"T","oauth":{}}`, []string{`a bearer token and "oauth": give one`}},
		"and an Authorization":   {`{"url":"https://h/mcp","headers":{"Authorization":"Bearer x"},"oauth":{}}`, []string{`headers: "Authorization" and a bearer token or "oauth"`}},
		"on a stdio server":      {`{"command":"srv","oauth":{}}`, []string{`a stdio server has no`, `"oauth"`}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
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

// Load names the file before the member at fault.
func TestLoadOAuthNamesTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "remote.mcp.json")
	if err := os.WriteFile(path, []byte(`{"url":"https://h/mcp","oauth":{"grant":"implicit"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.HasPrefix(err.Error(), path+`: oauth: grant: unknown grant "implicit"`) {
		t.Fatalf("Load = %v", err)
	}
}

func TestClientSecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte(" s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string { return map[string]string{"S": "from-env"}[k] }
	for name, c := range map[string]struct {
		o       OAuth
		want    string
		wantErr string
	}{
		"none":        {OAuth{}, "", ""},
		"file":        {OAuth{ClientSecretFile: file}, "s3cret", ""},
		"env":         {OAuth{ClientSecretEnv: "S"}, "from-env", ""},
		"env unset":   {OAuth{ClientSecretEnv: "UNSET"}, "", "oauth: client_secret_env: $UNSET is empty or unset"},
		"file absent": {OAuth{ClientSecretFile: filepath.Join(dir, "nope")}, "", "oauth: client_secret_file: "},
	} {
		got, err := c.o.ClientSecret(getenv)
		if (c.wantErr == "" && (err != nil || got != c.want)) || (c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr))) {
			t.Errorf("%s: ClientSecret() = %q, %v; want %q, error %q", name, got, err, c.want, c.wantErr)
		}
	}
}
