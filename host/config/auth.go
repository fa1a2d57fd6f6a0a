package config

import (
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Auth holds the settings of the auth block: its presence makes serve
// --http an OAuth 2.1 resource server (host/oauth), which accepts the
// access tokens of the issuers named, minted for resource, granting the
// scopes; --token, when given too, is accepted beside them.
//
//	auth {
//	  issuer   = "https://auth.example.com"      # or a list: ["https://a.example.com", "https://b.example.com"]
//	  resource = "https://mcp.example.com/mcp"   # this server's URL, as clients reach it: the tokens' audience
//	  scopes   = ["mcp:tools"]                   # every one needed (default none: any valid token)
//	  leeway   = "60s"                           # clock skew allowed on exp and nbf, 0s to 10m (default 60s)
//
//	  # opaque tokens: ask the authorization server (RFC 7662); without these, only JWTs are accepted
//	  introspection_endpoint = "https://auth.example.com/introspect"
//	  client_id              = "plughost"              # this server's credentials there
//	  client_secret_file     = "introspection.secret"  # or $PLUGHOST_OAUTH_CLIENT_SECRET
//
//	  # the token claims plugins learn with each call, besides subject, client, issuer and scopes
//	  pass_claims = ["groups", "email"]
//	}
type Auth struct {
	// Issuers are issuer's URLs (https; http only on loopback).
	Issuers []string
	// Resource is resource: an https URL (http only on loopback).
	Resource string
	// Scopes is scopes.
	Scopes []string
	// Leeway is leeway; 0 when absent (host/oauth's default, 60 s),
	// negative for "0s" (none), as host/oauth's Options.Leeway reads it.
	Leeway time.Duration
	// IntrospectionEndpoint is introspection_endpoint; "" when absent.
	IntrospectionEndpoint string
	// ClientID is client_id, needed with IntrospectionEndpoint.
	ClientID string
	// PassClaims is pass_claims: the token claims plugins are told of
	// with each call (the subject, client id, issuer and scopes always
	// are; the token never).
	PassClaims []string
	// ClientSecretFile is client_secret_file, joined to the configuration
	// file's directory when relative; "" when absent.
	ClientSecretFile string
}

var authSchema = hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "issuer", Required: true}, {Name: "resource", Required: true},
	{Name: "scopes"}, {Name: "pass_claims"}, {Name: "leeway"}, {Name: "introspection_endpoint"}, {Name: "client_id"}, {Name: "client_secret_file"}}}

// decode reads the auth block; dir is the configuration file's directory,
// against which a relative client_secret_file is resolved.
func (au *Auth) decode(body hcl.Body, dir string) error {
	content, err := attributes(body, &authSchema, func(name string, a *hcl.Attribute, v cty.Value) error {
		switch name {
		case "introspection_endpoint":
			if v.Type() != cty.String {
				return diag(a.Expr.Range(), "Invalid introspection_endpoint", "introspection_endpoint must be a URL")
			}
			if why := badURL(v.AsString()); why != "" {
				return diag(a.Expr.Range(), "Invalid introspection_endpoint", "introspection_endpoint "+v.AsString()+": "+why)
			}
			au.IntrospectionEndpoint = v.AsString()
		case "client_id":
			if v.Type() != cty.String || v.AsString() == "" {
				return diag(a.Expr.Range(), "Invalid client_id", "client_id must be this server's client id at the introspection endpoint")
			}
			au.ClientID = v.AsString()
		case "client_secret_file":
			if v.Type() != cty.String || strings.TrimSpace(v.AsString()) == "" {
				return diag(a.Expr.Range(), "Invalid client_secret_file", "client_secret_file must be the path of a file holding the client secret")
			}
			au.ClientSecretFile = v.AsString()
			if !filepath.IsAbs(au.ClientSecretFile) {
				au.ClientSecretFile = filepath.Join(dir, au.ClientSecretFile)
			}
		case "issuer":
			list, ok := stringList(v)
			if v.Type() == cty.String {
				list, ok = []string{v.AsString()}, true
			}
			if !ok || len(list) == 0 {
				return diag(a.Expr.Range(), "Invalid issuer", `issuer must be the authorization server's issuer URL, such as "https://auth.example.com", or a list of them`)
			}
			for _, s := range list {
				if why := badURL(s); why != "" {
					return diag(a.Expr.Range(), "Invalid issuer", "issuer "+s+": "+why)
				}
			}
			au.Issuers = list
		case "resource":
			if v.Type() != cty.String {
				return diag(a.Expr.Range(), "Invalid resource", `resource must be this server's URL as clients reach it, such as "https://mcp.example.com/mcp"`)
			}
			if why := badURL(v.AsString()); why != "" {
				return diag(a.Expr.Range(), "Invalid resource", "resource "+v.AsString()+": "+why)
			}
			au.Resource = v.AsString()
		case "scopes":
			list, ok := stringList(v)
			for _, s := range list {
				ok = ok && s != "" && !strings.ContainsAny(s, " \"\\")
			}
			if !ok {
				return diag(a.Expr.Range(), "Invalid scopes", `scopes must be a list of scope names without spaces or quotes, such as ["mcp:tools"]`)
			}
			au.Scopes = list
		case "pass_claims":
			list, ok := stringList(v)
			for _, s := range list {
				ok = ok && s != ""
			}
			if !ok {
				return diag(a.Expr.Range(), "Invalid pass_claims", `pass_claims must be a list of claim names, such as ["groups", "email"]`)
			}
			au.PassClaims = list
		case "leeway":
			d, err := durationIn(a, v, 0, 10*time.Minute, "0s to 10m")
			if err != nil {
				return err
			}
			au.Leeway = d
			if d == 0 {
				au.Leeway = -1 // none, not the default
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if a := content.Attributes["introspection_endpoint"]; a != nil && au.ClientID == "" {
		return diag(a.Range, "Missing client_id", "introspection_endpoint needs client_id (and client_secret_file or $PLUGHOST_OAUTH_CLIENT_SECRET): the credentials this server presents there")
	}
	for _, name := range []string{"client_id", "client_secret_file"} {
		if a := content.Attributes[name]; a != nil && au.IntrospectionEndpoint == "" {
			return diag(a.Range, "Unused "+name, name+" serves the introspection_endpoint, which is not set")
		}
	}
	return nil
}

// badURL says why s cannot be an issuer or resource URL; "" when it can.
func badURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || !u.IsAbs():
		return "want an absolute URL such as https://auth.example.com"
	case u.RawQuery != "" || u.Fragment != "":
		return "want a URL without query or fragment"
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http" && (u.Hostname() == "localhost" || net.ParseIP(u.Hostname()).IsLoopback()):
		return ""
	}
	return "want https (http only on loopback): tokens and keys must not travel in clear"
}
