package config

import (
	"net/url"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Console holds the settings of the console block: the console
// (host/console), plughost's pages in a browser, served at /console on
// serve --http's listener and on --console-listen's.
//
//	console {
//	  enabled = true                              # false: no console on any listener (default true)
//
//	  # people sign in through the auth block's authorization server (authorization code with PKCE)
//	  client_id          = "plughost-console"     # the console's registration there
//	  client_secret_file = "console.secret"       # a confidential client's secret (none for a public one)
//	  issuer             = "https://auth.example.com"  # which of the auth block's issuers (default its first)
//	  public_url         = "https://mcp.example.com"   # the origin browsers reach plughost by (default the request's)
//	}
//
// Without client_id, the console signs in only the static token's holder
// and the local user of a login link.
type Console struct {
	// Disabled is enabled = false.
	Disabled bool
	// ClientID is client_id: with it, people sign in through the
	// authorization server. It needs the auth block, whose tokens the
	// console verifies as the MCP endpoint does.
	ClientID string
	// ClientSecretFile is client_secret_file, joined to the configuration
	// file's directory when relative; "" for a public client.
	ClientSecretFile string
	// Issuer is issuer: one of the auth block's issuers; "" for its
	// first.
	Issuer string
	// PublicURL is public_url: the origin (scheme://host[:port], no path)
	// browsers reach the console by, which the redirect URI registered
	// at the issuer is made of; "" for the origin of each request.
	PublicURL string

	clientIDRange, issuerRange hcl.Range // where they are written, for checkAgainst's errors
}

var consoleSchema = hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "enabled"}, {Name: "client_id"},
	{Name: "client_secret_file"}, {Name: "issuer"}, {Name: "public_url"}}}

// decode reads the console block; dir is the configuration file's
// directory, against which a relative client_secret_file is resolved.
func (c *Console) decode(body hcl.Body, dir string) error {
	content, err := attributes(body, &consoleSchema, func(name string, a *hcl.Attribute, v cty.Value) error {
		switch name {
		case "enabled":
			if v.Type() != cty.Bool {
				return diag(a.Expr.Range(), "Invalid enabled", "enabled must be true or false")
			}
			c.Disabled = v.False()
		case "client_id":
			if v.Type() != cty.String || strings.TrimSpace(v.AsString()) == "" {
				return diag(a.Expr.Range(), "Invalid client_id", "client_id must be the console's client id at the authorization server, such as \"plughost-console\"")
			}
			c.ClientID, c.clientIDRange = v.AsString(), a.Expr.Range()
		case "client_secret_file":
			if v.Type() != cty.String || strings.TrimSpace(v.AsString()) == "" {
				return diag(a.Expr.Range(), "Invalid client_secret_file", "client_secret_file must be the path of a file holding the console's client secret")
			}
			c.ClientSecretFile = inDir(dir, v.AsString())
		case "issuer":
			if v.Type() != cty.String {
				return diag(a.Expr.Range(), "Invalid issuer", `issuer must be one of the auth block's issuers, such as "https://auth.example.com"`)
			}
			if why := badURL(v.AsString()); why != "" {
				return diag(a.Expr.Range(), "Invalid issuer", "issuer "+v.AsString()+": "+why)
			}
			c.Issuer, c.issuerRange = v.AsString(), a.Expr.Range()
		case "public_url":
			if v.Type() != cty.String {
				return diag(a.Expr.Range(), "Invalid public_url", `public_url must be the origin browsers reach plughost by, such as "https://mcp.example.com"`)
			}
			if why := badOrigin(v.AsString()); why != "" {
				return diag(a.Expr.Range(), "Invalid public_url", "public_url "+v.AsString()+": "+why)
			}
			c.PublicURL = strings.TrimSuffix(v.AsString(), "/")
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range []string{"client_secret_file", "issuer", "public_url"} {
		if a := content.Attributes[name]; a != nil && c.ClientID == "" {
			return diag(a.Range, "Unused "+name, name+" serves the sign-in through the authorization server, which needs client_id")
		}
	}
	return nil
}

// checkAgainst checks what the console block asks of the auth block: a
// sign-in through the authorization server verifies the access token as
// the MCP endpoint does, so it needs the auth block, and an issuer it
// names.
func (c *Console) checkAgainst(au *Auth) error {
	switch {
	case c.ClientID == "":
		return nil
	case au == nil:
		return diag(c.clientIDRange, "Console sign-in without an auth block",
			"client_id signs people in through an authorization server, whose tokens are checked by the auth block's settings: add an auth block (issuer, resource)")
	case c.Issuer != "" && len(au.Issuers) > 0 && !slices.Contains(au.Issuers, c.Issuer): // no issuers: the auth block's own error says why
		return diag(c.issuerRange, "Unknown console issuer",
			"issuer "+c.Issuer+" is not one of the auth block's issuers ("+strings.Join(au.Issuers, ", ")+"): its tokens would not be accepted")
	}
	return nil
}

// LoginIssuer is the issuer people sign in with: issuer, else the auth
// block's first.
func (c *Console) LoginIssuer(au *Auth) string {
	if c.Issuer != "" || au == nil || len(au.Issuers) == 0 {
		return c.Issuer
	}
	return au.Issuers[0]
}

// badOrigin says what is wrong with s as an origin browsers reach
// plughost by ("" when nothing): as badURL, and without a path, since the
// console's own paths are added to it.
func badOrigin(s string) string {
	if why := badURL(s); why != "" {
		return why
	}
	if u, _ := url.Parse(s); strings.TrimSuffix(u.Path, "/") != "" || u.User != nil {
		return "want an origin only (scheme://host[:port]), without a path or user: the console's paths are added to it"
	}
	return ""
}
