package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Discovery is what a server's refusal leads to: its Protected Resource
// Metadata, its authorization server's metadata, and what the refusal's
// challenge asked for.
type Discovery struct {
	Resource *oauthex.ProtectedResourceMetadata
	Server   *oauthex.AuthServerMeta
	// Scopes are the challenge's scope, else the resource's
	// scopes_supported (the specification's scope selection); nil when
	// neither says.
	Scopes []string
}

// Discover follows the refusal resp of a request to serverURL to the
// authorization server, as the MCP authorization specification
// (2025-11-25) says: the metadata URL the challenge names
// (resource_metadata), else the well-known URL at the endpoint's path,
// else at the root; then the first authorization server's metadata at
// RFC 8414's and OpenID Connect's well-known URLs. oauthex checks each
// document (the resource must be the server's; the issuer the one asked;
// PKCE must be supported).
func Discover(ctx context.Context, hc *http.Client, serverURL string, resp *http.Response) (*Discovery, error) {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, fmt.Errorf("the server's WWW-Authenticate header does not parse: %v", err)
	}
	var metadataURL string
	var scopes []string
	for _, c := range cs {
		if c.Scheme != "bearer" {
			continue
		}
		if metadataURL == "" {
			metadataURL = c.Params["resource_metadata"]
		}
		if scopes == nil && c.Params["scope"] != "" {
			scopes = strings.Fields(c.Params["scope"])
		}
	}
	prm, err := resourceMetadata(ctx, hc, metadataURL, serverURL)
	if err != nil {
		return nil, err
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, hc)
	if err != nil {
		return nil, fmt.Errorf("the metadata of the authorization server %s: %v", issuer, err)
	}
	if asm == nil {
		return nil, fmt.Errorf("the authorization server %s publishes no metadata (RFC 8414 or OpenID Connect discovery)", issuer)
	}
	if asm.TokenEndpoint == "" {
		return nil, fmt.Errorf("the metadata of the authorization server %s names no token_endpoint", issuer)
	}
	if scopes == nil {
		scopes = prm.ScopesSupported
	}
	return &Discovery{Resource: prm, Server: asm, Scopes: scopes}, nil
}

// resourceMetadata fetches the Protected Resource Metadata of serverURL:
// at metadataURL when the challenge named one, else at the well-known URL
// with the endpoint's path, else at the root (whose resource is then the
// origin). A document that is found but wrong (malformed, another
// resource, no authorization server) is reported as such; the error of
// none found names every URL tried.
func resourceMetadata(ctx context.Context, hc *http.Client, metadataURL, serverURL string) (*oauthex.ProtectedResourceMetadata, error) {
	type try struct{ url, resource string }
	var tries []try
	if metadataURL != "" {
		tries = append(tries, try{metadataURL, serverURL})
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("the server URL %q: %v", serverURL, err)
	}
	m := *u
	m.RawQuery, m.Fragment = "", ""
	if p := strings.Trim(u.Path, "/"); p != "" {
		m.Path = "/.well-known/oauth-protected-resource/" + p
		tries = append(tries, try{m.String(), serverURL})
	}
	m.Path = "/.well-known/oauth-protected-resource"
	origin := *u
	origin.Path, origin.RawPath, origin.RawQuery, origin.Fragment = "", "", "", ""
	tries = append(tries, try{m.String(), origin.String()})
	var errs []error
	for _, t := range tries {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, t.url, t.resource, hc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("the protected resource metadata at %s names no authorization server", t.url)
		}
		return prm, nil
	}
	return nil, fmt.Errorf("no protected resource metadata for %s: %w", serverURL, errors.Join(errs...))
}
