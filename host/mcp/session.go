package mcp

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// A Session is the protocol state of one MCP session. It reads nothing by
// itself: a transport hands it each incoming message with
// [Session.Handle], together with the sink for that message's response and
// related notifications (progress, logs); notifications unrelated to any
// request (tools/list_changed) and the server's own requests go to the
// session-wide sink given to [Server.NewSession]. On stdio both sinks are
// the same line writer; on Streamable HTTP the first is a POST's response
// stream and the second the session's GET stream.
//
// Its state is split by concern, one field each: the lifecycle (state,
// negotiated version, client capabilities), the logging level, the calls
// in flight, the requests pending at the client, the notifier (list_changed,
// resources/updated), the resource subscriptions and, in tool search mode
// with AddFound, the tools its searches found.
type Session struct {
	srv  *Server
	conn SessionConn

	life   lifecycle
	level  atomic.Int32 // index into levels: the least severe level sent
	calls  callTable
	client clientRequests
	notes  notices
	subs   subscriptions
	found  *foundTools // nil unless ToolSearch.AddFound (and never stateless)
	view   view        // what the caller may see (Options.Access)

	// inline lets tools/calls start on the read loop (Catalog.StartCall;
	// set before the first message; stdio only).
	inline bool
	// sessionOnly: the transport serves only sessions (HTTP+SSE), so a
	// stateless request is answered -32601 (set before the first message).
	sessionOnly bool
	// loop: the session is served by a read loop (Serve, ServeStdio) whose
	// workers run its long calls; a call must not wait for the client on
	// one (set before the first message).
	loop bool

	opened time.Time // when it opened (Server.Sessions)

	work      sync.WaitGroup // calls in flight and the notifier
	done      chan struct{}  // closed by Close
	closeOnce sync.Once

	writeFailed atomic.Bool
	// pending counts work whose output is not yet written: calls in flight,
	// a batch's response and a due list_changed. Drain waits for it.
	pending  atomic.Int64
	idleHook func() // Options.OnSession's: called after pending decreases
	drainMu  sync.Mutex
	drained  chan struct{} // closed when pending reaches 0 (see Drain)
}

// SessionConn is what a transport tells a session about its client.
type SessionConn struct {
	// Notify receives notifications unrelated to any request and the
	// server's requests to the client.
	Notify Sink
	// Reachable, when set, reports whether a server request can reach the
	// client now (on Streamable HTTP: its GET stream is open). Nil means
	// always.
	Reachable func() bool
	// OnWriteError, when set, learns of the first failed write.
	OnWriteError func(error)
	// Peer names the client on its transport (its session id, its
	// address), for [Options.OnCallEnd].
	Peer Peer
}

// lifecycle is where a session stands: its state, the negotiated version
// and what the client declared.
type lifecycle struct {
	state   atomic.Int32
	version atomic.Int32 // index into versions, valid from stateInitializing
	caps    clientCaps   // written once, before stateInitialized
	client  string       // clientInfo, "name/version" (clientName); written with caps
}

// Session states.
const (
	stateNew          int32 = iota // only initialize and ping are served
	stateInitializing              // initialize accepted, response on its way
	stateInitialized               // initialize answered: requests are served
	stateReady                     // notifications/initialized received
)

// NewSession starts a session whose notifications unrelated to a request
// (list_changed, resources/updated) go to notify. Close it when the client is gone.
func (srv *Server) NewSession(notify Sink) *Session {
	return srv.OpenSession(SessionConn{Notify: notify})
}

// OpenSession starts a session on conn. Close it when the client is gone.
func (srv *Server) OpenSession(conn SessionConn) *Session {
	s := srv.newSession(conn)
	if sc := srv.search; sc != nil && sc.addFound > 0 {
		s.found = newFoundTools(s, sc.addFound)
	}
	s.view.track(srv)
	srv.addSession(s)
	s.work.Add(1)
	go s.notifier()
	s.notes.unsubscribe = srv.catalog.Subscribe(s.listsChanged)
	s.notes.unwatch = srv.catalog.OnResourceUpdated(s.resourceUpdated)
	return s
}

// OpenStateless returns a session for one exchange of stateless requests
// (a Streamable HTTP POST without a session): it keeps no state between
// requests and sends no notification unrelated to a request; peer names
// the client (its address: a stateless request has no session). It is meant
// for stateless requests; any other is answered as a session that was
// never initialized answers it. Close it once Handle has returned.
func (srv *Server) OpenStateless(peer Peer) *Session {
	s := srv.newSession(SessionConn{Notify: discard{}, Peer: peer})
	s.notes.unsubscribe, s.notes.unwatch = func() {}, func() {}
	return s
}

// discard is a Sink that drops everything.
type discard struct{}

func (discard) Write([]byte) error { return nil }

// newSession makes the parts every session has.
func (srv *Server) newSession(conn SessionConn) *Session {
	s := &Session{
		srv:    srv,
		conn:   conn,
		calls:  newCallTable(srv.tuned().maxInFlight),
		done:   make(chan struct{}),
		opened: time.Now(),
	}
	s.client.pending = make(map[string]*outRequest)
	s.notes.wake = make(chan struct{}, 1)
	s.subs.max = srv.maxSubs
	s.subs.refused = func() { srv.limitHit(LimitSubscriptions) }
	s.level.Store(defaultLevel)
	s.view.set(srv, &s.conn.Peer.Caller)
	if srv.onSession != nil {
		s.idleHook = srv.onSession(s)
	}
	return s
}

// Close ends the session: it stops notifications, cancels the requests in
// flight (they get no response), releases the session's resource
// subscriptions and waits for its goroutines. Close is idempotent.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.notes.unsubscribe()
		s.notes.unwatch()
		s.srv.removeSampler(s)
		s.srv.removeSession(s)
		s.client.close() // first: requests the calls abandon need no notifications/cancelled
		s.calls.close()
		s.subs.close()
		close(s.done)
		s.work.Wait()
	})
}

// RefuseStateless makes the session answer every request of the stateless
// revision -32601, for a transport that serves only sessions (HTTP+SSE).
// Call it before the first message.
func (s *Session) RefuseStateless() { s.sessionOnly = true }

// SetPeer names the session's client on its transport, as
// [SessionConn.Peer] does, for a session that [Server.ServeSession]
// opened. Call it before the first message.
func (s *Session) SetPeer(p Peer) {
	s.srv.sessions.mu.Lock() // Server.Sessions reads it from other goroutines
	s.conn.Peer = p
	s.srv.sessions.mu.Unlock()
	s.view.set(s.srv, &s.conn.Peer.Caller)
	s.view.track(s.srv)
}

// Initialized reports whether the session has answered initialize.
func (s *Session) Initialized() bool { return s.life.state.Load() >= stateInitialized }

// Version returns the negotiated protocol version, or "" before
// initialize.
func (s *Session) Version() string {
	if s.life.state.Load() < stateInitializing {
		return ""
	}
	return versions[s.life.version.Load()]
}

// negotiated returns the index of the negotiated version, or -1 before
// initialize is answered.
func (s *Session) negotiated() int {
	if s.life.state.Load() < stateInitialized {
		return -1
	}
	return int(s.life.version.Load())
}

// Handle serves one incoming message: a request, a notification, a response
// or (in a session that negotiated 2025-03-26) a batch. The response and the
// notifications related to the request go to out. Handle returns once the
// response is written, or once the request is cancelled (no response then).
// Handle may be called concurrently; messages whose order matters (say,
// initialize before tools/list) must not be.
func (s *Session) Handle(ctx context.Context, msg []byte, out Sink) {
	if run := s.dispatch(ctx, msg, out); run != nil {
		run()
	}
}

// dispatch does, at once and in the caller's order, everything about msg
// that must happen in arrival order: decoding, state changes, cancellation,
// registering a long call. It answers every request but long calls, and
// returns the rest of the work (running the long calls) as a function to be
// called exactly once, or nil.
func (s *Session) dispatch(ctx context.Context, msg []byte, out Sink) (run func()) {
	if perr := jsonrpc.Check(msg); perr != nil {
		s.send(out, func(b []byte) []byte { return jsonrpc.AppendError(b, nil, perr) })
		return nil
	}
	if !jsonrpc.IsBatch(msg) {
		return s.dispatchOne(ctx, msg, reply{out: out})
	}
	fail := func(m string) {
		s.send(out, func(b []byte) []byte {
			return jsonrpc.AppendError(b, nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, m))
		})
	}
	if s.negotiated() != vBatch {
		fail("invalid request: JSON-RPC batches are supported only in protocol version 2025-03-26")
		return nil
	}
	elems := jsonrpc.Elements(msg)
	if len(elems) == 0 {
		fail("invalid request: empty batch")
		return nil
	}
	br := &batchReply{s: s, out: out}
	var runs []func()
	for _, e := range elems {
		if r := s.dispatchOne(ctx, e, reply{out: out, batch: br}); r != nil {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		br.flush()
		return nil
	}
	s.pending.Add(1) // the batch's response
	br.left.Store(int64(len(runs)))
	// The last call to finish writes the batch's response (batchReply.done):
	// a call waiting for the client may have left its run (inputRounds)
	// and finish later, on a goroutine of its own.
	return func() {
		var wg sync.WaitGroup
		for _, r := range runs[1:] {
			wg.Go(r)
		}
		runs[0]()
		wg.Wait()
	}
}

// dispatchOne is dispatch for a single message: the method table decides.
func (s *Session) dispatchOne(ctx context.Context, msg []byte, rp reply) (run func()) {
	m, derr := jsonrpc.Decode(msg)
	if derr != nil {
		s.respondError(rp, derr.ID, derr)
		return nil
	}
	stateless := IsStateless(m)
	if m.Kind == jsonrpc.Request {
		ctx, rp = s.observeRequest(ctx, m, rp, stateless)
	}
	in := incoming{ctx: ctx, msg: m, rp: rp}
	if stateless {
		if s.sessionOnly {
			s.respondError(rp, m.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found: "+string(m.Method)+
				" (this transport, HTTP+SSE, serves protocol versions up to "+versions[vLatest]+" after initialize; "+
				StatelessVersion+" is served on the Streamable HTTP endpoint)"))
			return nil
		}
		return s.dispatchStateless(in)
	}
	switch m.Kind {
	case jsonrpc.Response:
		s.client.route(m, s.srv.log)
		return nil
	case jsonrpc.Notification:
		if e := table[string(m.Method)]; e != nil && e.notification && e.serve != nil {
			return e.serve(s, in, e.name)
		}
		s.srv.log.Debug("ignored a notification", "method", string(m.Method))
		return nil
	}
	e, lerr := lookup(m.Method, s.negotiated())
	switch {
	case lerr != nil:
		s.respondError(rp, m.ID, lerr)
		return nil
	case e.notification:
		s.respondError(rp, m.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found: "+e.name))
		return nil
	case !e.beforeInit && !s.Initialized():
		s.respondError(rp, m.ID, errNotInitialized)
		return nil
	case e.long && s.rateLimited(in, e.name):
		return nil
	}
	return e.serve(s, in, e.name)
}

// dispatchStateless is dispatchOne for a request of the stateless
// revision: its _meta stands in for the session's state.
func (s *Session) dispatchStateless(in incoming) (run func()) {
	m := in.msg
	st := new(stateless)
	if merr := st.decode(m.Params); merr != nil {
		s.respondError(in.rp, m.ID, merr)
		return nil
	}
	e := table[string(m.Method)]
	switch {
	case e == nil || e.notification:
		s.respondError(in.rp, m.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found: "+string(m.Method)))
		return nil
	case e.revs&statelessEra == 0:
		s.respondError(in.rp, m.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found: "+e.name+
			" is not in protocol version "+StatelessVersion))
		return nil
	}
	in.st = st
	if e.long && s.rateLimited(in, e.name) {
		return nil
	}
	return e.serve(s, in, e.name)
}

var errNotInitialized = jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "session not initialized: send initialize first")

// idle marks one pending piece of work done.
func (s *Session) idle() {
	if s.pending.Add(-1) == 0 {
		s.drainMu.Lock()
		if s.drained != nil && s.pending.Load() == 0 {
			close(s.drained)
			s.drained = nil
		}
		s.drainMu.Unlock()
	}
	if s.idleHook != nil {
		s.idleHook()
	}
}

// Pending counts the session's work whose output is not yet written: calls
// in flight (running or waiting for a slot), a batch's response, a due
// list_changed.
func (s *Session) Pending() int64 { return s.pending.Load() }

// Drain waits until no call is in flight and no notification is due, or
// until ctx ends (it then returns ctx's error). Graceful shutdown calls it
// after the transport has stopped taking requests.
func (s *Session) Drain(ctx context.Context) error {
	s.drainMu.Lock()
	if s.pending.Load() == 0 {
		s.drainMu.Unlock()
		return nil
	}
	if s.drained == nil {
		s.drained = make(chan struct{})
	}
	ch := s.drained
	s.drainMu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
