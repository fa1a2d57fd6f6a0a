package declared

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
)

// The grants a remote server's OAuth member may name (OAuth.Grant).
const (
	// GrantLogin is the authorization code grant with PKCE: an operator
	// logs in once in a browser (`plughost login NAME`), and the host
	// refreshes the tokens it stored.
	GrantLogin = "authorization_code"
	// GrantClientCredentials is the client credentials grant: a
	// pre-registered confidential client gets its own tokens, no one logs
	// in.
	GrantClientCredentials = "client_credentials"
)

// OAuth is how plughost authorizes itself to a remote server that is an
// OAuth 2.1 resource server (MCP's authorization specification). The
// authorization server, its endpoints and the scopes are discovered from
// the server's 401 (Protected Resource Metadata, RFC 9728, then the
// authorization server's metadata, RFC 8414): a declaration names only the
// client.
//
//	{"url": "https://mcp.example.com/mcp", "oauth": {}}
//	{"url": "https://mcp.example.com/mcp", "oauth": {"client_id": "plughost", "client_secret_file": "/run/secrets/mcp"}}
//	{"url": "https://mcp.example.com/mcp", "oauth": {"grant": "client_credentials", "client_id": "svc", "client_secret_env": "MCP_SECRET", "scopes": ["mcp:tools"]}}
//
// The first logs in with a client the server's authorization server
// registers on the spot (Dynamic Client Registration), or with a Client ID
// Metadata Document when client_metadata_url names one and the
// authorization server supports them; the second with a pre-registered
// client; the third needs no login at all.
type OAuth struct {
	// Grant is GrantLogin (the default) or GrantClientCredentials.
	Grant string `json:"grant,omitempty"`
	// ClientID is a client registered with the authorization server
	// beforehand; required by GrantClientCredentials.
	ClientID string `json:"client_id,omitempty"`
	// ClientSecretFile names a file holding its secret (trailing white
	// space removed); ClientSecretEnv a variable of plughost's
	// environment instead. As with a bearer token, the operator grants
	// the source in the server's sandbox block.
	ClientSecretFile string `json:"client_secret_file,omitempty"`
	ClientSecretEnv  string `json:"client_secret_env,omitempty"`
	// ClientMetadataURL is the https URL of a Client ID Metadata
	// Document describing plughost as a client (its redirect URIs must
	// allow http://127.0.0.1 on any port), used as the client id where
	// the authorization server advertises
	// client_id_metadata_document_supported. Login only.
	ClientMetadataURL string `json:"client_metadata_url,omitempty"`
	// Scopes are requested on top of those the server asks for (its
	// WWW-Authenticate scope, else its metadata's scopes_supported).
	Scopes []string `json:"scopes,omitempty"`
	// RedirectPort is the loopback port `plughost login` listens on for
	// the browser's redirect (http://127.0.0.1:PORT/callback), for an
	// authorization server that wants a pre-registered client's redirect
	// URI exactly; 0 (the default) picks a free one, as RFC 8252 allows.
	RedirectPort int `json:"redirect_port,omitempty"`
}

// oauthFields are the members of "oauth", for the "did you mean" of an
// unknown one.
var oauthFields = []string{"grant", "client_id", "client_secret_file", "client_secret_env", "client_metadata_url", "scopes", "redirect_port"}

// checkOAuthMembers refuses an unknown member of "oauth", naming the one
// meant when it is a near miss.
func checkOAuthMembers(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("oauth: not a JSON object: %w", err)
	}
	for k := range m {
		if !slices.Contains(oauthFields, k) {
			return fmt.Errorf("oauth: unknown member %q%s (oauth has: %s)", k, nearest(k, oauthFields), strings.Join(oauthFields, ", "))
		}
	}
	return nil
}

// check fills Grant and reports the first mistake.
func (o *OAuth) check() error {
	if o.Grant == "" {
		o.Grant = GrantLogin
	}
	switch o.Grant {
	case GrantLogin:
		if o.ClientMetadataURL != "" {
			u, err := url.Parse(o.ClientMetadataURL)
			if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
				return fmt.Errorf("oauth: client_metadata_url: %q is not an https URL with a path (a Client ID Metadata Document's URL is the client id)", o.ClientMetadataURL)
			}
		}
	case GrantClientCredentials:
		if o.ClientID == "" || (o.ClientSecretFile == "" && o.ClientSecretEnv == "") {
			return errors.New(`oauth: grant "client_credentials" needs "client_id" and its secret ("client_secret_file" or "client_secret_env")`)
		}
		if o.ClientMetadataURL != "" || o.RedirectPort != 0 {
			return errors.New(`oauth: "client_metadata_url" and "redirect_port" are a login's: grant "client_credentials" has no browser`)
		}
	default:
		return fmt.Errorf("oauth: grant: unknown grant %q (want %q or %q)", o.Grant, GrantLogin, GrantClientCredentials)
	}
	if o.ClientSecretFile != "" && o.ClientSecretEnv != "" {
		return errors.New("oauth: client_secret_file and client_secret_env: give one")
	}
	if (o.ClientSecretFile != "" || o.ClientSecretEnv != "") && o.ClientID == "" {
		return errors.New(`oauth: a client secret without "client_id"`)
	}
	if o.ClientSecretFile != "" && !strings.HasPrefix(o.ClientSecretFile, "/") {
		return fmt.Errorf("oauth: client_secret_file: %q is not an absolute path", o.ClientSecretFile)
	}
	if o.ClientSecretEnv != "" && strings.ContainsAny(o.ClientSecretEnv, "=\x00") {
		return fmt.Errorf("oauth: client_secret_env: %q is not a variable name", o.ClientSecretEnv)
	}
	for _, s := range o.Scopes {
		// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
		if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' || r == '\\' }) {
			return fmt.Errorf("oauth: scopes: %q is not a scope (RFC 6749: printable ASCII, no space, quote or backslash)", s)
		}
	}
	if o.RedirectPort < 0 || o.RedirectPort > 65535 {
		return fmt.Errorf("oauth: redirect_port: %d is not a port", o.RedirectPort)
	}
	return nil
}

// ClientSecret returns the client secret of o, read from its file or from
// getenv; "" when it names none.
func (o *OAuth) ClientSecret(getenv func(string) string) (string, error) {
	switch {
	case o.ClientSecretFile != "":
		b, err := os.ReadFile(o.ClientSecretFile)
		if err != nil {
			return "", fmt.Errorf("oauth: client_secret_file: %w", err)
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return "", fmt.Errorf("oauth: client_secret_file: %s is empty", o.ClientSecretFile)
		}
		return s, nil
	case o.ClientSecretEnv != "":
		s := getenv(o.ClientSecretEnv)
		if s == "" {
			return "", fmt.Errorf("oauth: client_secret_env: $%s is empty or unset", o.ClientSecretEnv)
		}
		return s, nil
	}
	return "", nil
}
