package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseAuth(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		src  string
		want *Auth
	}{
		"full": {"auth {\n  issuer = \"https://auth.example.com\"\n  resource = \"https://mcp.example.com/mcp\"\n  scopes = [\"mcp:tools\"]\n  leeway = \"30s\"\n}\n",
			&Auth{Issuers: []string{"https://auth.example.com"}, Resource: "https://mcp.example.com/mcp", Scopes: []string{"mcp:tools"}, Leeway: 30 * time.Second}},
		"issuers": {"auth {\n  issuer = [\"https://a.example.com\", \"http://127.0.0.1:9000\"]\n  resource = \"https://mcp.example.com/mcp\"\n}\n",
			&Auth{Issuers: []string{"https://a.example.com", "http://127.0.0.1:9000"}, Resource: "https://mcp.example.com/mcp"}},
		"no leeway": {"auth {\n  issuer = \"https://a.example.com\"\n  resource = \"https://mcp.example.com/mcp\"\n  leeway = \"0s\"\n}\n",
			&Auth{Issuers: []string{"https://a.example.com"}, Resource: "https://mcp.example.com/mcp", Leeway: -1}},
		"introspection": {"auth {\n  issuer = \"https://a.example.com\"\n  resource = \"https://mcp.example.com/mcp\"\n  introspection_endpoint = \"https://a.example.com/introspect\"\n  client_id = \"rs\"\n  client_secret_file = \"rs.secret\"\n}\n",
			&Auth{Issuers: []string{"https://a.example.com"}, Resource: "https://mcp.example.com/mcp", IntrospectionEndpoint: "https://a.example.com/introspect",
				ClientID: "rs", ClientSecretFile: "/etc/plughost/rs.secret"}},
		"absent": {"search {}\n", nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(c.src), "/etc/plughost/plughost.hcl")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.Auth); diff != "" {
				t.Errorf("auth block (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseAuthErrors(t *testing.T) {
	t.Parallel()
	const res = "  resource = \"https://mcp.example.com/mcp\"\n"
	for name, c := range map[string]struct{ src, want string }{
		"no issuer":                       {"auth {\n" + res + "}\n", `The argument "issuer" is required`},
		"http issuer":                     {"auth {\n  issuer = \"http://auth.example.com\"\n" + res + "}\n", `plughost.hcl:2,12-37: Invalid issuer; issuer http://auth.example.com: want https (http only on loopback)`},
		"relative issuer":                 {"auth {\n  issuer = \"auth.example.com\"\n" + res + "}\n", `Invalid issuer; issuer auth.example.com: want an absolute URL`},
		"empty issuers":                   {"auth {\n  issuer = []\n" + res + "}\n", `Invalid issuer; issuer must be the authorization server's issuer URL`},
		"no resource":                     {"auth {\n  issuer = \"https://a.example.com\"\n}\n", `The argument "resource" is required`},
		"fragment":                        {"auth {\n  issuer = \"https://a.example.com\"\n  resource = \"https://mcp.example.com/mcp#x\"\n}\n", `without query or fragment`},
		"scope space":                     {"auth {\n  issuer = \"https://a.example.com\"\n" + res + "  scopes = [\"a b\"]\n}\n", `plughost.hcl:4,12-19: Invalid scopes`},
		"scope string":                    {"auth {\n  issuer = \"https://a.example.com\"\n" + res + "  scopes = \"mcp:tools\"\n}\n", `Invalid scopes`},
		"leeway":                          {"auth {\n  issuer = \"https://a.example.com\"\n" + res + "  leeway = \"1h\"\n}\n", `leeway must be from 0s to 10m, not 1h0m0s`},
		"introspection without client_id": {"auth {\n  issuer = \"https://a.example.com\"\n" + res + "  introspection_endpoint = \"https://a.example.com/i\"\n}\n", `plughost.hcl:4,3-53: Missing client_id`},
		"client_id alone":                 {"auth {\n  issuer = \"https://a.example.com\"\n" + res + "  client_id = \"rs\"\n}\n", `Unused client_id`},
		"scopes in audit":                 {"audit {\n  file = \"-\"\n  scopes = []\n}\n", `"scopes" belongs in auth { }.`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(c.src), "plughost.hcl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}
