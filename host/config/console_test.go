package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const consoleAuth = "auth {\n  issuer = [\"https://a.example.com\", \"https://b.example.com\"]\n  resource = \"https://mcp.example.com/mcp\"\n}\n"

// TestParseConsole: the console block's keys, its defaults (enabled, no
// OAuth sign-in) and the issuer defaulting to the auth block's first.
func TestParseConsole(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		src    string
		want   Console
		issuer string
	}{
		"absent":   {src: "search {}\n"},
		"disabled": {src: "console {\n  enabled = false\n}\n", want: Console{Disabled: true}},
		"oauth": {src: consoleAuth + "console {\n  client_id = \"plughost-console\"\n  client_secret_file = \"console.secret\"\n  public_url = \"https://mcp.example.com/\"\n}\n",
			want:   Console{ClientID: "plughost-console", ClientSecretFile: "/etc/plughost/console.secret", PublicURL: "https://mcp.example.com"},
			issuer: "https://a.example.com"},
		"second issuer": {src: consoleAuth + "console {\n  client_id = \"c\"\n  issuer = \"https://b.example.com\"\n}\n",
			want: Console{ClientID: "c", Issuer: "https://b.example.com"}, issuer: "https://b.example.com"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(c.src), "/etc/plughost/plughost.hcl")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.Console, cmpopts.IgnoreUnexported(Console{})); diff != "" {
				t.Errorf("console block (-want +got):\n%s", diff)
			}
			if got := cfg.Console.LoginIssuer(cfg.Auth); got != c.issuer {
				t.Errorf("LoginIssuer = %q, want %q", got, c.issuer)
			}
		})
	}
}

// TestParseConsoleErrors: each mistake is named with its file:line and
// what to write instead.
func TestParseConsoleErrors(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ src, want string }{
		"enabled string":     {"console {\n  enabled = \"no\"\n}\n", `plughost.hcl:2,13-17: Invalid enabled; enabled must be true or false`},
		"empty client_id":    {"console {\n  client_id = \"\"\n}\n", `plughost.hcl:2,15-17: Invalid client_id`},
		"without auth":       {"console {\n  client_id = \"c\"\n}\n", `plughost.hcl:2,15-18: Console sign-in without an auth block; client_id signs people in`},
		"unknown issuer":     {consoleAuth + "console {\n  client_id = \"c\"\n  issuer = \"https://c.example.com\"\n}\n", `plughost.hcl:7,12-35: Unknown console issuer; issuer https://c.example.com is not one of the auth block's issuers (https://a.example.com, https://b.example.com)`},
		"http issuer":        {consoleAuth + "console {\n  client_id = \"c\"\n  issuer = \"http://a.example.com\"\n}\n", `Invalid issuer; issuer http://a.example.com: want https (http only on loopback)`},
		"public_url path":    {consoleAuth + "console {\n  client_id = \"c\"\n  public_url = \"https://mcp.example.com/console\"\n}\n", `Invalid public_url; public_url https://mcp.example.com/console: want an origin only`},
		"public_url http":    {consoleAuth + "console {\n  client_id = \"c\"\n  public_url = \"http://mcp.example.com\"\n}\n", `want https (http only on loopback)`},
		"issuer alone":       {"console {\n  issuer = \"https://a.example.com\"\n}\n", `plughost.hcl:2,3-35: Unused issuer; issuer serves the sign-in through the authorization server, which needs client_id`},
		"unknown key":        {"console {\n  client = \"c\"\n}\n", `An argument named "client" is not expected here`},
		"duplicate":          {"console {}\nconsole {}\n", `Duplicate console block`},
		"public_url in auth": {"auth {\n  issuer = \"https://a.example.com\"\n  resource = \"https://mcp.example.com/mcp\"\n  public_url = \"https://x\"\n}\n", `"public_url" belongs in console { }.`},
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
