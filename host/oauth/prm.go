package oauth

import (
	"encoding/json"
	"net/url"
	"strings"
)

// WellKnownPrefix is where Protected Resource Metadata lives (RFC 9728
// §3): at this prefix followed by the resource's path
// ("/.well-known/oauth-protected-resource/mcp" for ".../mcp").
const WellKnownPrefix = "/.well-known/oauth-protected-resource"

// Metadata is the Protected Resource Metadata document (RFC 9728) of the
// Verifier's resource, JSON: resource, authorization_servers,
// scopes_supported, bearer_methods_supported. The slice is shared: do not
// change it.
func (v *Verifier) Metadata() []byte { return v.meta }

// MetadataURL is the URL of the document [Verifier.Metadata] serves, for
// WWW-Authenticate's resource_metadata: the well-known prefix inserted
// between the resource's host and its path.
func (v *Verifier) MetadataURL() string {
	u, _ := url.Parse(v.opts.Resource) // checked by New
	return u.Scheme + "://" + u.Host + WellKnownPrefix + strings.TrimSuffix(u.Path, "/")
}

func (v *Verifier) metadata() []byte {
	doc := struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported,omitempty"`
		BearerMethods        []string `json:"bearer_methods_supported"`
	}{v.opts.Resource, v.opts.Issuers, v.opts.Scopes, []string{"header"}}
	b, _ := json.Marshal(&doc) // strings only
	return b
}
