package mcp

import (
	"cmp"
	"slices"
	"time"
)

// The open sessions as an operator sees them (the console's sessions
// page): a snapshot, taken without stopping any session.

// SessionInfo is one open session.
type SessionInfo struct {
	// ID is the transport's session id, cut to its first IDPrefix
	// characters: enough to tell sessions apart, not to take one over
	// (on Streamable HTTP the id is what a client sends to resume it).
	// "" on stdio.
	ID string
	// Transport is Peer.Transport: "stdio", "streamable-http" or "sse".
	Transport string
	// Protocol is the negotiated protocol version; "" before initialize.
	Protocol string
	// Client is the clientInfo "name/version" the client sent; "" before
	// initialize. Written by the client: text, never markup.
	Client string
	// Caller is who the client acts for.
	Caller Caller
	// Remote is the client's address; "" on stdio.
	Remote string
	// Opened is when the session opened.
	Opened time.Time
	// InFlight is how many of its requests are being answered now.
	InFlight int
}

// IDPrefix is how much of a session's id SessionInfo.ID shows.
const IDPrefix = 8

// Sessions returns the open sessions, oldest first. The stateless
// revision's exchanges are not sessions: they hold nothing between
// requests, and are not listed.
func (srv *Server) Sessions() []SessionInfo {
	srv.sessions.mu.Lock()
	out := make([]SessionInfo, 0, len(srv.sessions.all))
	for s := range srv.sessions.all {
		p := s.conn.Peer // SetPeer writes it under srv.sessions.mu
		info := SessionInfo{ID: p.SessionID[:min(len(p.SessionID), IDPrefix)], Transport: p.Transport, Caller: p.Caller,
			Remote: p.Remote, Opened: s.opened, Protocol: s.Version()}
		if s.Initialized() { // clientInfo is written before the state says so
			info.Client = s.life.client
		}
		s.calls.mu.Lock()
		info.InFlight = len(s.calls.inflight)
		s.calls.mu.Unlock()
		out = append(out, info)
	}
	srv.sessions.mu.Unlock()
	slices.SortFunc(out, func(a, b SessionInfo) int { return cmp.Or(a.Opened.Compare(b.Opened), cmp.Compare(a.ID, b.ID)) })
	return out
}

// CallerKey is the key a task record names its caller by (a digest of
// its identity: a shared store holds no user's name), so that an
// operator's view can name the caller of a task when a session of that
// caller is open.
func CallerKey(c *Caller) string { return callerKey(c) }
