package pluginproto

import (
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
)

// Caller is who a call acts for, as the host verified it: on Streamable
// HTTP with OAuth, the subject, client and scopes of the client's access
// token, and those of its claims the host's configuration passes on
// (auth { pass_claims = [...] }); on stdio, the user running the host. A
// plugin never sees the token itself. A handler reads it from
// Request.Caller (nil when the host knows nobody: HTTP without OAuth, or a
// host older than this field).
type Caller = pluginhost.Caller

func callerOf(m *pluginpb.Caller) *Caller {
	if m == nil {
		return nil
	}
	c := &Caller{Subject: m.GetSubject(), ClientID: m.GetClientId(), Issuer: m.GetIssuer(), Scopes: m.GetScopes(), Local: m.GetLocal()}
	if len(m.GetClaims()) > 0 {
		c.Claims = m.GetClaims()
	}
	return c
}
