package streamable

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// The request guards' helpers: which Host names this machine (DNS
// rebinding protection), which Origin may call, and what a browser's
// CORS preflight may send.

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func normalizeOrigin(o string) string { return strings.ToLower(strings.TrimSuffix(o, "/")) }

// originAllowed: the server's own origin, or one configured.
func (h *httpHandler) originAllowed(origin, host string) bool {
	if h.anyOrig || h.origins[normalizeOrigin(origin)] {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, host)
}

// baseAllowedHeaders are the request headers a browser page of an allowed
// origin may send: those of both protocol eras.
const baseAllowedHeaders = "Content-Type, Accept, Authorization, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name"

// allowedHeaders answers a CORS preflight's Access-Control-Request-Headers:
// the fixed list, and the Mcp-Param-* headers it asks for (a tool's
// x-mcp-header parameters, whose names no list can foresee).
func allowedHeaders(r *http.Request) string {
	list := baseAllowedHeaders
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if len(name) > len(hdrParamStart) && strings.EqualFold(name[:len(hdrParamStart)], hdrParamStart) && isHTTPToken(name) {
				list += ", " + name
			}
		}
	}
	return list
}
