package streamable

import (
	"context"
	"crypto/subtle"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/oauth"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Authorization: the static token (Options.Token) and OAuth access tokens
// (Options.OAuth), and the Protected Resource Metadata that tells a client
// refused with 401 where to get one.
//
// With OAuth, a request without a token gets
//
//	401  WWW-Authenticate: Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"
//
// one with a token that does not verify the same, plus error="invalid_token"
// and an error_description saying why (expired, for another resource, …);
// one whose token lacks a scope 403 with error="insufficient_scope" and the
// scopes needed; and, when the issuer's keys cannot be fetched (or its
// introspection endpoint does not answer), 503 with Retry-After. The JSON-RPC error of the body says the same. No token is
// ever logged.

// callerKey carries the verified caller in a request's context.
type callerKey struct{}

// callerOf is the caller authorize verified for r (zero without OAuth).
func callerOf(r *http.Request) mcp.Caller {
	c, _ := r.Context().Value(callerKey{}).(mcp.Caller)
	return c
}

// metricsAllowed reports whether the authorized request r may read the
// metrics (Options.Metrics): an OAuth caller when Options.MetricsAllowed
// says so; the static token's holder and any caller of a listener without
// credentials always.
func (h *httpHandler) metricsAllowed(r *http.Request) bool {
	c, oauthCaller := r.Context().Value(callerKey{}).(mcp.Caller)
	if !oauthCaller {
		return true
	}
	return h.opts.MetricsAllowed != nil && h.opts.MetricsAllowed(&c)
}

// authorize checks the request's credentials: the static token, or an
// OAuth access token. It returns the request to serve (with the caller in
// its context), or nil once it has answered 401, 403 or 503.
func (h *httpHandler) authorize(w http.ResponseWriter, r *http.Request) *http.Request {
	v := h.opts.OAuth
	if h.token == nil && v == nil {
		return r
	}
	got := r.Header.Get("Authorization")
	if h.token != nil && subtle.ConstantTimeCompare([]byte(got), h.token) == 1 {
		return r
	}
	if v == nil {
		challenge := `Bearer realm="plughost"`
		msg := "unauthorized: send the header Authorization: Bearer <token>"
		if got != "" {
			challenge += `, error="invalid_token"`
			msg = "unauthorized: the bearer token is not valid"
		}
		w.Header().Set("WWW-Authenticate", challenge)
		httpError(w, http.StatusUnauthorized, nil, jsonrpc.CodeInvalidRequest, msg)
		return nil
	}
	token, ok := bearer(got)
	if !ok {
		token = "" // another scheme, or none: as if no token
	}
	caller, err := v.Verify(r.Context(), token)
	if err == nil {
		c := mcp.Caller{Subject: caller.Subject, ClientID: caller.ClientID, Issuer: caller.Issuer, Scopes: caller.Scopes, Claims: caller.Claims}
		return r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
	}
	challenge := `Bearer resource_metadata="` + v.MetadataURL() + `"`
	if s := v.Scopes(); len(s) > 0 {
		challenge += `, scope="` + strings.Join(s, " ") + `"`
	}
	desc := err.Error()
	var pending *oauth.PendingError
	if u := errors.Unwrap(err); u != nil { // "invalid token: the token has expired": keep why
		desc = strings.TrimPrefix(desc, u.Error()+": ")
	}
	switch {
	case errors.Is(err, oauth.ErrNoToken):
		w.Header().Set("WWW-Authenticate", challenge)
		httpError(w, http.StatusUnauthorized, nil, jsonrpc.CodeInvalidRequest,
			"unauthorized: send an OAuth access token (Authorization: Bearer <token>); see "+v.MetadataURL())
	case errors.Is(err, oauth.ErrInsufficientScope):
		w.Header().Set("WWW-Authenticate", challenge+`, error="insufficient_scope", error_description="`+quotable(desc)+`"`)
		h.log.Info("refused a token without the needed scope", "subject", caller.Subject, "client_id", caller.ClientID,
			"jti", caller.TokenID)
		httpError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest, "forbidden: insufficient scope: "+desc)
	case errors.As(err, &pending):
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(pending.RetryAfter.Seconds()))))
		h.log.Debug("a token names a signing key not known yet", "remote", r.RemoteAddr, "retry_after", pending.RetryAfter)
		httpError(w, http.StatusServiceUnavailable, nil, jsonrpc.CodeInvalidRequest, "service unavailable: "+desc+"; retry then")
	case errors.Is(err, oauth.ErrIssuerUnavailable):
		w.Header().Set("Retry-After", "10")
		h.log.Warn("cannot check an access token", "error", err)
		httpError(w, http.StatusServiceUnavailable, nil, jsonrpc.CodeInvalidRequest,
			"service unavailable: the authorization server cannot be reached to check the token; retry shortly")
	default:
		w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_token", error_description="`+quotable(desc)+`"`)
		h.log.Debug("refused an access token", "remote", r.RemoteAddr, "why", desc)
		httpError(w, http.StatusUnauthorized, nil, jsonrpc.CodeInvalidRequest, "unauthorized: invalid token: "+desc)
	}
	return nil
}

// bearer cuts the token from an Authorization header's value ("Bearer"
// in any case, RFC 9110 §11.1).
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// quotable makes s fit a quoted-string of a header: printable ASCII, no
// quote or backslash (RFC 6750 §3's error_description).
func quotable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '\''
		}
		return r
	}, s)
}

// isMetadataPath reports whether path is Protected Resource Metadata's:
// the well-known prefix alone, or followed by the path of /mcp. The
// endpoints of Options.Endpoints share /mcp's resource (their 401 names
// its metadata): a token for it serves at them too.
func (h *httpHandler) isMetadataPath(path string) bool {
	if h.opts.OAuth == nil {
		return false
	}
	rest, ok := strings.CutPrefix(path, oauth.WellKnownPrefix)
	return ok && (rest == "" || rest == PathMCP)
}

// serveMetadata answers GET of the Protected Resource Metadata: public,
// readable by any page (a browser client reads it before it has a token).
func (h *httpHandler) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions {
		w.Header().Set("Allow", "GET, HEAD")
		httpError(w, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest, "method not allowed: use GET")
		return
	}
	hd := w.Header()
	hd.Set("Access-Control-Allow-Origin", "*")
	if r.Method == http.MethodOptions {
		hd.Set("Access-Control-Allow-Methods", "GET")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	hd["Content-Type"] = hdrJSON
	hd.Set("Cache-Control", "max-age=300")
	w.Write(h.opts.OAuth.Metadata())
}

// sameCaller reports whether the request's caller is the one that opened
// the session: a session is not handed from one subject to another.
func sameCaller(a, b mcp.Caller) bool { return a.Issuer == b.Issuer && a.Subject == b.Subject }
