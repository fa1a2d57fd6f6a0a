package mcp

import (
	"cmp"
	"encoding/json"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/plughost/plughost/host/tool"
)

// Retuning: the settings a configuration reload changes while the server
// serves (plughost's SIGHUP). They are read where new work starts, never
// held by work in flight, so that changing them drops nothing:
//
//   - Access: the guard of every open session is recomputed; a session
//     whose caller's view of a list changed gets that list's list_changed
//     (only it), and its next request, call or read is decided by the new
//     guard. A call already running keeps the guard it started with.
//     Stateless requests take the rules in force when they arrive.
//   - MaxInFlight: the call slots of the sessions opened from now on (an
//     open session keeps its slots: shrinking them under calls that hold
//     them would strand the calls); the pending bound (4×) of every
//     Streamable HTTP session at once.
//   - NotificationRate: the calls started from now on.
//   - MaxListenBytes and ListenBudget: the subscriptions/listen streams
//     opened from now on (an open stream is never cut for holding what
//     was allowed when it opened).
//   - StateTTL: the requestStates sealed from now on (one sealed earlier
//     keeps the expiry it was sealed with).
//   - EscalateAfter: the calls started from now on.
//
// The other options are the server's for its whole life.

// tuning is the retunable part of a server's options, defaults filled in.
// A Server holds one in an atomic pointer and replaces it whole.
type tuning struct {
	access         func(*Caller) tool.Guard // nil: no rules, everyone sees everything
	maxInFlight    int
	notifyRate     rate.Limit // per call, per second; the burst is as many
	maxListenBytes int64
	stateTTL       time.Duration
	escalateAfter  time.Duration // 0 without tasks
}

// tuningOf is the tuning opts ask for, with the defaults.
func tuningOf(opts *Options, withTasks bool) *tuning {
	t := &tuning{
		access:         opts.Access,
		maxInFlight:    cmp.Or(max(opts.MaxInFlight, 0), DefaultMaxInFlight),
		notifyRate:     rate.Limit(cmp.Or(max(opts.NotificationRate, 0), DefaultNotificationRate)),
		maxListenBytes: cmp.Or(max(opts.MaxListenBytes, 0), DefaultMaxListenBytes),
		stateTTL:       cmp.Or(max(opts.StateTTL, 0), DefaultStateTTL),
	}
	if withTasks {
		t.escalateAfter = opts.EscalateAfter
	}
	return t
}

// DefaultMaxInFlight is Options.MaxInFlight's default.
const DefaultMaxInFlight = 64

// tuned returns the settings in force now.
func (srv *Server) tuned() *tuning { return srv.tuning.Load() }

// Retune makes the retunable settings of opts the server's (see above;
// the other fields of opts are ignored), for the work that starts from
// now on. Access rules may come or go; a server built without them
// must list per caller (NewServer's catalog is host/catalog's) for rules
// to be given here, else Retune panics as NewServer does.
func (srv *Server) Retune(opts *Options) {
	if opts.Access != nil && srv.guarded == nil {
		panic("mcp: Options.Access needs a catalog that lists per caller (host/catalog's)")
	}
	srv.tuning.Store(tuningOf(opts, srv.tasks != nil))
	srv.listeners.budget.Store(cmp.Or(max(opts.ListenBudget, 0), DefaultListenBudget))
	for _, s := range srv.openSessions() {
		s.reguard()
	}
}

// sessionSet is the server's open sessions (not the stateless exchanges,
// which hold no view): those a change of the access rules must reach.
type sessionSet struct {
	mu  sync.Mutex
	all map[*Session]struct{}
}

func (srv *Server) addSession(s *Session) {
	srv.sessions.mu.Lock()
	if srv.sessions.all == nil {
		srv.sessions.all = map[*Session]struct{}{}
	}
	srv.sessions.all[s] = struct{}{}
	srv.sessions.mu.Unlock()
}

func (srv *Server) removeSession(s *Session) {
	srv.sessions.mu.Lock()
	delete(srv.sessions.all, s)
	srv.sessions.mu.Unlock()
}

func (srv *Server) openSessions() []*Session {
	srv.sessions.mu.Lock()
	defer srv.sessions.mu.Unlock()
	list := make([]*Session, 0, len(srv.sessions.all))
	for s := range srv.sessions.all {
		list = append(list, s)
	}
	return list
}

// reguard gives the session the guard the rules in force give its
// caller, and makes list_changed due for each list whose view by the
// caller now differs from what the client was last shown.
func (s *Session) reguard() {
	old := s.view.guard()
	s.view.set(s.srv, nil)
	if bits := s.view.sums.regard(s.srv, old, s.view.guard()); bits != 0 {
		s.notes.own.Or(bits) // decided here: the notifier must not filter them again
		s.wakeNotifier()
	}
}

// seeAll is the guard of a caller no rule restricts, so that its view can
// be hashed as a guarded one is: only a change of rules compares them.
type seeAll struct{}

func (seeAll) Key() string                             { return "\x00all" } // no caller's key: those are JSON
func (seeAll) Visible(*tool.Item) bool                 { return true }
func (seeAll) Allow(*tool.Item, json.RawMessage) error { return nil }

// regard takes, when the guard changes from old to now, the sums of what
// now sees, and returns the list kinds whose sums differ from what the
// client was last shown (with old; everything, for a nil guard).
func (vs *viewSums) regard(srv *Server, old, now tool.Guard) uint32 {
	if old == nil && now == nil {
		return 0 // saw everything, and still does
	}
	var all [3]uint64
	if old == nil || now == nil {
		all = sumsOf(srv, seeAll{})
	}
	after := all
	if now != nil {
		after = sumsOf(srv, now)
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	before := all
	if old != nil {
		before = vs.sums
	}
	vs.sums = after
	var bits uint32
	for i, bit := range [...]uint32{listTools, listResources, listPrompts} {
		if before[i] != after[i] {
			bits |= bit
		}
	}
	return bits
}
