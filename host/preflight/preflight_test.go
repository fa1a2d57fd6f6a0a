package preflight

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plughost/plughost/internal/redistest"
	"github.com/plughost/plughost/internal/testcert"
)

// A key long enough for the state key, and a password for the redis.
const (
	goodKey  = "0123456789abcdef0123456789abcdef"
	password = "hunter2-but-longer"
)

// closedPort is a TCP address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Every case is a configuration file as an operator would write it, with
// the files beside it; want are the problems Check must find, in order,
// each as "where|what" substrings (where "" for a problem nowhere in
// particular). {{dir}} is the configuration's directory, {{redis}} a
// running redis-server's socket with a password, {{closed}} a TCP address
// nothing listens on.
func TestCheck(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--requirepass", password)
	closed := closedPort(t)
	type file struct {
		content string
		mode    os.FileMode
	}
	cases := map[string]struct {
		hcl   string
		files map[string]file
		env   map[string]string
		tls   bool // give serve's --tls-cert and --tls-key, which do not exist
		want  []string
	}{
		"an empty file serves":             {hcl: ""},
		"the starter configuration serves": {hcl: "sandbox {\n}\nplugins {\n  start = \"lazy\"\n}\n"},
		"every diagnostic, not the first and a count": {
			hcl: "audit {\n  fil = \"audit.jsonl\"\n}\nsandbox {\n  memory = \"lots\"\n}\n",
			want: []string{
				`plughost.hcl:1,7|Missing required argument`,
				`plughost.hcl:2,3|Unsupported argument`, // Did you mean "file"? (the fix)
				`plughost.hcl:5,`,
			},
		},
		"an unknown key far from any names the nearest valid one": {
			hcl:  "sandbox {\n  alow_network = \"all\"\n}\n",
			want: []string{`plughost.hcl:2,3|Unsupported argument`},
		},
		"a rule that does not compile": {
			hcl:  "access {\n  rule \"r\" {\n    deny = \"item.name == \"\n  }\n}\n",
			want: []string{`plughost.hcl:3:|rule "r"`},
		},
		"the audit log's directory is missing": {
			hcl:  "audit {\n  file = \"logs/audit.jsonl\"\n}\n",
			want: []string{`plughost.hcl:2|its directory {{dir}}/logs does not exist`},
		},
		"the audit log's directory exists": {
			hcl:   "audit {\n  file = \"logs/audit.jsonl\"\n}\n",
			files: map[string]file{"logs/.keep": {"", 0o600}},
		},
		"the state key file is missing": {
			hcl:  "stateless {\n  state_key_file = \"state.key\"\n}\n",
			want: []string{`plughost.hcl:2|state.key (state_key_file in the stateless block) does not exist`},
		},
		"the state key file is open to others": {
			hcl:   "stateless {\n  state_key_file = \"state.key\"\n}\n",
			files: map[string]file{"state.key": {goodKey, 0o644}},
			want:  []string{`plughost.hcl:2|chmod 600 {{dir}}/state.key`},
		},
		"the state key file is too short": {
			hcl:   "stateless {\n  state_key_file = \"state.key\"\n}\n",
			files: map[string]file{"state.key": {"short\n", 0o600}},
			want:  []string{`plughost.hcl:2|the state key is 5 bytes`},
		},
		"the state key in the environment wins, and is too short": {
			hcl:   "stateless {\n  state_key_file = \"state.key\"\n}\n",
			files: map[string]file{"state.key": {goodKey, 0o600}},
			env:   map[string]string{EnvStateKey: "short"},
			want:  []string{`$PLUGHOST_STATE_KEY|the state key is 5 bytes`},
		},
		"a good state key": {
			hcl:   "stateless {\n  state_key_file = \"state.key\"\n}\n",
			files: map[string]file{"state.key": {goodKey + "\n", 0o600}},
		},
		"the redis is unreachable": {
			hcl:   "stateless {\n  state_key_file = \"state.key\"\n}\ntasks {\n  redis {\n    address = \"{{closed}}\"\n  }\n}\n",
			files: map[string]file{"state.key": {goodKey + "\n", 0o600}},
			want:  []string{`plughost.hcl:6|redis at {{closed}}`},
		},
		"the redis refuses the password": {
			hcl:   "stateless {\n  state_key_file = \"state.key\"\n}\ntasks {\n  redis {\n    address = \"{{redis}}\"\n    password_file = \"redis.pw\"\n  }\n}\n",
			files: map[string]file{"redis.pw": {"wrong", 0o600}, "state.key": {goodKey + "\n", 0o600}},
			want:  []string{`plughost.hcl:6|redis at {{redis}}`},
		},
		"the redis password file is missing": {
			hcl:   "stateless {\n  state_key_file = \"state.key\"\n}\ntasks {\n  redis {\n    address = \"{{redis}}\"\n    password_file = \"redis.pw\"\n  }\n}\n",
			files: map[string]file{"state.key": {goodKey + "\n", 0o600}},
			want:  []string{`plughost.hcl:7|redis.pw (password_file in the tasks block's redis block) does not exist`},
		},
		"the redis answers": {
			hcl:   "stateless {\n  state_key_file = \"state.key\"\n}\ntasks {\n  redis {\n    address = \"{{redis}}\"\n    password_file = \"redis.pw\"\n  }\n}\n",
			files: map[string]file{"redis.pw": {password + "\n", 0o600}, "state.key": {goodKey + "\n", 0o600}},
		},
		"the redis answers, but the replicas share no state key": {
			hcl:   "tasks {\n  redis {\n    address = \"{{redis}}\"\n    password_file = \"redis.pw\"\n  }\n}\n",
			files: map[string]file{"redis.pw": {password + "\n", 0o600}},
			want:  []string{`plughost.hcl:2|tasks in redis need the state key every replica shares`},
		},
		"allowed_signers is missing": {
			hcl:  "trust {\n  mode = \"signed\"\n  allowed_signers = \"allowed_signers\"\n  file = \"trust.json\"\n}\n",
			want: []string{`plughost.hcl:3|allowed signers`},
		},
		"a bundles root is not a certificate": {
			hcl:   "trust {\n  bundles {\n    trusted_roots = [\"ca.pem\"]\n  }\n}\n",
			files: map[string]file{"ca.pem": {"not a certificate", 0o644}},
			want:  []string{`plughost.hcl:3|trusted_roots: {{dir}}/ca.pem holds no PEM certificate`},
		},
		"the trust file is not JSON": {
			hcl:   "trust {\n  mode = \"pinned\"\n  file = \"trust.json\"\n}\n",
			files: map[string]file{"trust.json": {"not json", 0o600}},
			want:  []string{`plughost.hcl:3|`},
		},
		"the embeddings key's variable is unset": {
			hcl:  "search {\n  embeddings {\n    url = \"http://127.0.0.1:1/v1\"\n    model = \"m\"\n    api_key_env = \"PREFLIGHT_TEST_UNSET\"\n  }\n}\n",
			want: []string{`plughost.hcl:5|$PREFLIGHT_TEST_UNSET is not set`},
		},
		"the embeddings key's variable is set": {
			hcl: "search {\n  embeddings {\n    url = \"http://127.0.0.1:1/v1\"\n    model = \"m\"\n    api_key_env = \"PREFLIGHT_TEST_SET\"\n  }\n}\n",
			env: map[string]string{"PREFLIGHT_TEST_SET": "k"},
		},
		"the introspection secret file is missing": {
			hcl: "auth {\n  issuer = \"https://auth.example.com\"\n  resource = \"https://mcp.example.com/mcp\"\n" +
				"  introspection_endpoint = \"https://auth.example.com/introspect\"\n  client_id = \"plughost\"\n  client_secret_file = \"secret\"\n}\n",
			want: []string{`plughost.hcl:6|client_secret_file`},
		},
		"the console's client secret file is open to others": {
			hcl: "auth {\n  issuer = \"https://auth.example.com\"\n  resource = \"https://mcp.example.com/mcp\"\n}\n" +
				"console {\n  client_id = \"plughost-console\"\n  client_secret_file = \"console.secret\"\n}\n",
			files: map[string]file{"console.secret": {"s3cret\n", 0o644}},
			want:  []string{`plughost.hcl:7|console: client_secret_file {{dir}}/console.secret`},
		},
		"the console's client secret file is readable": {
			hcl: "auth {\n  issuer = \"https://auth.example.com\"\n  resource = \"https://mcp.example.com/mcp\"\n}\n" +
				"console {\n  client_id = \"plughost-console\"\n  client_secret_file = \"console.secret\"\n}\n",
			files: map[string]file{"console.secret": {"s3cret\n", 0o600}},
		},
		"the TLS pair is missing": {
			tls:  true,
			want: []string{`--tls-cert, --tls-key|`},
		},
		"several problems at once": {
			hcl:  "audit {\n  file = \"logs/a.jsonl\"\n}\nstateless {\n  state_key_file = \"k\"\n}\n",
			want: []string{`plughost.hcl:2|audit log`, `plughost.hcl:5|k (state_key_file`},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			expand := strings.NewReplacer("{{dir}}", dir, "{{redis}}", srv.Socket, "{{closed}}", closed).Replace
			path := filepath.Join(dir, "plughost.hcl")
			if err := os.WriteFile(path, []byte(expand(c.hcl)), 0o600); err != nil {
				t.Fatal(err)
			}
			for name, f := range c.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(f.content), f.mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(p, f.mode); err != nil { // past the umask
					t.Fatal(err)
				}
			}
			o := &Options{Config: path, Getenv: func(k string) string {
				if k == "XDG_STATE_HOME" {
					return dir
				}
				return c.env[k]
			}}
			if c.tls {
				o.TLSCert, o.TLSKey = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
			}
			rep := Check(o)
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.String())
			}
			if len(rep.Problems) != len(c.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(rep.Problems), len(c.want), strings.Join(got, "\n"))
			}
			for i, w := range c.want {
				where, what, _ := strings.Cut(expand(w), "|")
				p := rep.Problems[i]
				if !strings.Contains(p.Where, where) || !strings.Contains(p.What, what) {
					t.Errorf("problem %d = %q; want where ~ %q, what ~ %q", i, p, where, what)
				}
				if p.Where == "" || (p.What == "" && p.Fix == "") {
					t.Errorf("problem %d = %q: a problem says where, and what", i, p)
				}
			}
			if (rep.Err() == nil) != (len(c.want) == 0) {
				t.Errorf("Err() = %v with %d problems", rep.Err(), len(rep.Problems))
			}
			if len(c.want) == 0 && rep.Config == nil {
				t.Error("no problems but no Config")
			}
		})
	}
}

// An unknown key is named, with its nearest valid key: hcl's own
// suggestion when it is a typo away, else the nearest key of the file and
// the block it belongs in.
func TestUnknownKeyNamesNearest(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ hcl, want string }{
		"a typo away":      {"audit {\n  file = \"-\"\n  argument = true\n}\n", `Did you mean "arguments"?`},
		"further":          {"sandbox {\n  alow_network = \"all\"\n}\n", `The nearest valid key is "allow_net"`},
		"in another block": {"sandbox {\n  idle_timeot = \"1m\"\n}\n", `"idle_timeout"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "plughost.hcl")
			if err := os.WriteFile(path, []byte(c.hcl), 0o600); err != nil {
				t.Fatal(err)
			}
			rep := Check(&Options{Config: path})
			if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Fix, c.want) {
				t.Fatalf("problems = %q; want one whose fix says %s", rep.Problems, c.want)
			}
		})
	}
}

// A good TLS pair passes.
func TestCheckTLS(t *testing.T) {
	t.Parallel()
	ca := testcert.NewCA(t)
	cert, key := ca.Leaf(t, 1)
	certFile, keyFile := testcert.Write(t, t.TempDir(), cert, key)
	if rep := Check(&Options{TLSCert: certFile, TLSKey: keyFile}); len(rep.Problems) != 0 {
		t.Fatalf("problems = %q", rep.Problems)
	}
	if rep := Check(&Options{TLSCert: keyFile, TLSKey: certFile}); len(rep.Problems) != 1 {
		t.Fatalf("swapped pair: problems = %q; want one", rep.Problems)
	}
}
