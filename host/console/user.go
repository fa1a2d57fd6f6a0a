package console

import "time"

// user is a signed-in person: who they are as the access rules see them,
// the name approvals are recorded under, and their session's CSRF token.
type user struct {
	caller Caller
	// name is who approvals and revocations are audited as: the OAuth
	// subject and issuer ("alice via https://auth.example.com"), "the
	// static token's holder", or the local user of the login link.
	name string
	// full: the static token's holder or the login link's user, who may
	// do everything without asking the rules.
	full bool
	// csrf is the session's CSRF token, which every POST must carry.
	csrf string
	// expires: the session ends then (an OAuth session, at its access
	// token's expiry); zero for none beyond the idle TTL.
	expires time.Time
}

// may reports whether u may do kind ("console", or "approve" for
// plugin), by the rules in force.
func (h *Handler) may(u *user, kind, plugin string) bool {
	if u.full {
		return true
	}
	return h.opts.Allowed != nil && h.opts.Allowed(&u.caller, kind, plugin)
}
