package pluginhost

import "encoding/json"

// Caller is who a call acts for, as the host verified it: on Streamable
// HTTP with OAuth, the subject, client and scopes of the client's access
// token, and those of its claims the host's configuration passes on
// (auth { pass_claims = [...] }); on stdio, the user running the host. A
// plugin never sees the token itself. A handler reads it from
// Request.Caller (nil when the host knows nobody: HTTP without OAuth, or a
// host older than this field).
type Caller struct {
	// Subject is the token's "sub", or the local user's name.
	Subject string
	// ClientID is the OAuth client the token was issued to; "" on stdio.
	ClientID string
	// Issuer is the token's issuer; "" on stdio.
	Issuer string
	// Scopes are the scopes the token grants.
	Scopes []string
	// Claims are the claims passed on, a JSON object; nil when none.
	Claims json.RawMessage
	// Local is true on stdio: the caller is the user running the host.
	Local bool
}
