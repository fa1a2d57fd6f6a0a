package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/plughost/plughost/host/tool"
)

// versions are the protocol versions the server speaks, latest first.
var versions = [...]string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

const (
	vLatest   = 0
	vBatch    = 2 // 2025-03-26: the only version with JSON-RPC batches
	vOriginal = 3 // 2024-11-05: progress notifications have no message
)

// Session states.
const (
	stateNew          int32 = iota // only initialize and ping are served
	stateInitializing              // initialize accepted, response on its way
	stateInitialized               // initialize answered: requests are served
	stateReady                     // notifications/initialized received
)

// levels are the MCP logging levels, least severe first.
var levels = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// defaultLevel is the threshold before any logging/setLevel: info and above.
const defaultLevel = 1

// methods maps the methods the server knows to their handlers' kinds.
var methods = map[string]int{
	"initialize":                methodInitialize,
	"ping":                      methodPing,
	"tools/list":                methodToolsList,
	"tools/call":                methodToolsCall,
	"logging/setLevel":          methodSetLevel,
	"notifications/initialized": methodInitialized,
	"notifications/cancelled":   methodCancelled,
}

const (
	methodUnknown = iota
	methodInitialize
	methodPing
	methodToolsList
	methodToolsCall
	methodSetLevel
	methodInitialized
	methodCancelled
)

var errNotInitialized = &rpcError{codeInvalidRequest, "session not initialized: send initialize first"}

// A Session is the protocol state of one MCP session: its lifecycle, the
// negotiated version, the logging level and the requests in flight. It
// reads nothing by itself: a transport hands it each incoming message with
// [Session.Handle], together with the sink for that message's response and
// related notifications (progress, logs); notifications unrelated to any
// request (tools/list_changed) go to the session-wide sink given to
// [Server.NewSession]. On stdio both sinks are the same line writer; on
// Streamable HTTP the first is a POST's response stream and the second the
// session's GET stream.
type Session struct {
	srv    *Server
	notify Sink
	sem    chan struct{} // running tools/call slots

	state   atomic.Int32
	version atomic.Int32 // index into versions, valid from stateInitializing
	level   atomic.Int32 // index into levels: the least severe level sent

	mu       sync.Mutex
	inflight map[string]*request
	closed   bool
	work     sync.WaitGroup // request goroutines and the notifier

	// Server-to-client requests (request.go).
	caps    clientCaps             // what initialize declared; set before stateInitialized
	outSeq  atomic.Uint64          // numbers the server's request ids
	outReqs map[string]*outRequest // requests awaiting the client's response, under mu
	// reachable, when set (Streamable HTTP), reports whether a server
	// request can reach the client now (its GET stream is open).
	reachable func() bool

	changed     chan struct{} // list_changed is due (1-buffered)
	done        chan struct{} // closed by Close
	unsubscribe func()

	// onWriteError, when set, learns of a failed write (Serve then stops).
	onWriteError func(error)
	writeFailed  atomic.Bool
	// pending counts work whose output is not yet written: calls in flight
	// and a due list_changed. Tests wait for it to drain.
	pending   atomic.Int64
	idleHook  func() // tests only: called after pending decreases
	closeOnce sync.Once

	drainMu sync.Mutex
	drained chan struct{} // closed when pending reaches 0 (see drain)
}

// NewSession starts a session whose notifications unrelated to a request
// (tools/list_changed) go to notify. Close it when the client is gone.
func (srv *Server) NewSession(notify Sink) *Session {
	return srv.newSession(notify, nil)
}

// newSession is NewSession with a callback for failed writes.
func (srv *Server) newSession(notify Sink, onWriteError func(error)) *Session {
	s := &Session{
		srv:          srv,
		notify:       notify,
		onWriteError: onWriteError,
		sem:          make(chan struct{}, srv.maxInFlight),
		inflight:     make(map[string]*request),
		outReqs:      make(map[string]*outRequest),
		changed:      make(chan struct{}, 1),
		done:         make(chan struct{}),
	}
	s.level.Store(defaultLevel)
	if srv.onSession != nil {
		srv.onSession(s)
	}
	s.work.Add(1)
	go s.notifier()
	s.unsubscribe = srv.catalog.Subscribe(s.toolsChanged)
	return s
}

// Close ends the session: it stops list_changed notifications, cancels the
// requests in flight (they get no response) and waits for their goroutines.
// Close is idempotent.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.unsubscribe()
		s.srv.removeSampler(s)
		s.mu.Lock()
		s.closed = true
		for _, r := range s.inflight {
			r.cancelled = true
			r.cancel()
		}
		s.mu.Unlock()
		close(s.done)
		s.work.Wait()
	})
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

// reply routes a request's response: to out, or into a batch's response.
type reply struct {
	out   Sink
	batch *batchReply
}

// dispatch does, at once and in the caller's order, everything about msg
// that must happen in arrival order: decoding, state changes, cancellation,
// registering a call. It answers every request but tools/call itself, and
// returns the rest of the work (running the call) as a function to be called
// exactly once, or nil.
func (s *Session) dispatch(ctx context.Context, msg []byte, out Sink) (run func()) {
	if perr := parseError(msg); perr != nil {
		s.send(out, func(b []byte) []byte { return appendError(b, nil, perr) })
		return nil
	}
	i := skipWS(msg, 0)
	if msg[i] != '[' {
		return s.dispatchOne(ctx, msg, reply{out: out})
	}
	// A batch.
	fail := func(m string) {
		s.send(out, func(b []byte) []byte { return appendError(b, nil, &rpcError{codeInvalidRequest, m}) })
	}
	if st := s.state.Load(); st < stateInitialized || s.version.Load() != vBatch {
		fail("invalid request: JSON-RPC batches are supported only in protocol version 2025-03-26")
		return nil
	}
	elems := arrayElems(msg)
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
	return func() {
		defer s.idle()
		var wg sync.WaitGroup
		for _, r := range runs[1:] {
			wg.Go(r)
		}
		runs[0]()
		wg.Wait()
		br.flush()
	}
}

// parseError checks that msg is one JSON value in UTF-8 (RFC 8259).
func parseError(msg []byte) *rpcError {
	switch {
	case !json.Valid(msg):
		return &rpcError{codeParseError, "parse error: invalid JSON"}
	case !utf8.Valid(msg):
		return &rpcError{codeParseError, "parse error: invalid UTF-8"}
	}
	return nil
}

// dispatchOne is dispatch for a single message.
func (s *Session) dispatchOne(ctx context.Context, msg []byte, rp reply) (run func()) {
	env, badID, rerr := decodeEnvelope(msg)
	if rerr != nil {
		s.respondError(rp, badID, rerr)
		return nil
	}
	if env.method == nil {
		s.response(env)
		return nil
	}
	kind := methods[string(env.method[1:len(env.method)-1])]
	if kind == methodUnknown && bytes.IndexByte(env.method, '\\') >= 0 {
		name, _ := unquote(env.method)
		kind = methods[name]
	}
	if env.id == nil { // a notification: never answered
		s.notification(kind, env)
		return nil
	}
	if kind == methodUnknown || kind == methodInitialized || kind == methodCancelled {
		name, _ := unquote(env.method)
		m := "method not found: " + name
		if name == "server/discover" {
			m += " (send initialize; this server speaks protocol versions up to " + versions[vLatest] + ")"
		}
		s.respondError(rp, env.id, &rpcError{codeMethodNotFound, m})
		return nil
	}
	if st := s.state.Load(); st < stateInitialized && kind != methodInitialize && kind != methodPing {
		s.respondError(rp, env.id, errNotInitialized)
		return nil
	}
	switch kind {
	case methodInitialize:
		s.initialize(rp, env)
	case methodPing:
		s.respondResult(rp, env.id, []byte("{}"))
	case methodSetLevel:
		s.setLevel(rp, env)
	case methodToolsList:
		s.listTools(rp, env)
	case methodToolsCall:
		return s.startCall(ctx, rp, env)
	}
	return nil
}

// notification handles a message without an id.
func (s *Session) notification(kind int, env envelope) {
	switch kind {
	case methodInitialized:
		if !s.state.CompareAndSwap(stateInitialized, stateReady) {
			s.srv.log.Debug("ignored notifications/initialized", "state", s.state.Load())
		} else if s.caps.sampling {
			s.srv.addSampler(s)
		}
	case methodCancelled:
		s.cancelled(env.params)
	default:
		s.srv.log.Debug("ignored a notification", "method", string(env.method))
	}
}

// cancelled handles notifications/cancelled: the request's context ends and
// its response is suppressed. Unknown and finished ids are ignored.
func (s *Session) cancelled(params []byte) {
	id := member(params, "requestId")
	if id == nil || !validID(id) {
		s.srv.log.Debug("ignored notifications/cancelled without a valid requestId")
		return
	}
	s.mu.Lock()
	r := s.inflight[idKey(id)]
	if r != nil {
		r.cancelled = true
		r.cancel()
	}
	s.mu.Unlock()
}

func (s *Session) initialize(rp reply, env envelope) {
	var p struct {
		ProtocolVersion *string          `json:"protocolVersion"`
		Capabilities    *json.RawMessage `json:"capabilities"`
		ClientInfo      *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	if env.params == nil || json.Unmarshal(env.params, &p) != nil || p.ProtocolVersion == nil {
		s.respondError(rp, env.id, &rpcError{codeInvalidParams,
			"invalid params: initialize needs protocolVersion (a string), capabilities (an object) and clientInfo (an object with name and version)"})
		return
	}
	if p.Capabilities != nil && !isObject(*p.Capabilities) {
		s.respondError(rp, env.id, &rpcError{codeInvalidParams, "invalid params: capabilities must be an object"})
		return
	}
	if !s.state.CompareAndSwap(stateNew, stateInitializing) {
		s.respondError(rp, env.id, &rpcError{codeInvalidRequest, "invalid request: session already initialized"})
		return
	}
	v := vLatest
	for i, sv := range versions {
		if sv == *p.ProtocolVersion {
			v = i
		}
	}
	s.version.Store(int32(v))
	if p.Capabilities != nil {
		s.caps = parseClientCaps(*p.Capabilities)
	}
	client := []any{"requested", *p.ProtocolVersion, "negotiated", versions[v]}
	if p.ClientInfo != nil {
		client = append(client, "client", p.ClientInfo.Name, "client_version", p.ClientInfo.Version)
	}
	if s.caps.sampling {
		client = append(client, "sampling", true, "sampling_tools", s.caps.samplingTools)
	}
	s.srv.log.Info("session initialized", client...)
	s.respondResult(rp, env.id, s.srv.initResult[v])
	s.state.Store(stateInitialized)
}

func (s *Session) setLevel(rp reply, env envelope) {
	name, ok := unquote(member(env.params, "level"))
	if i := levelIndex(name); ok && i >= 0 {
		s.level.Store(int32(i))
		s.respondResult(rp, env.id, []byte("{}"))
		return
	}
	m := "invalid params: level must be a string"
	if ok {
		m = "invalid params: unknown level " + strconv.Quote(name)
	}
	s.respondError(rp, env.id, &rpcError{codeInvalidParams, m + "; want one of " + strings.Join(levels[:], ", ")})
}

func levelIndex(name string) int {
	for i, l := range levels {
		if l == name {
			return i
		}
	}
	return -1
}

func (s *Session) listTools(rp reply, env envelope) {
	var cursor string
	if raw := member(env.params, "cursor"); raw != nil {
		c, ok := unquote(raw)
		if !ok {
			s.respondError(rp, env.id, &rpcError{codeInvalidParams, "invalid params: cursor must be a string"})
			return
		}
		cursor = c
	}
	tools, next, err := s.srv.catalog.ListTools(cursor)
	switch {
	case errors.Is(err, tool.ErrInvalidCursor):
		s.respondError(rp, env.id, &rpcError{codeInvalidParams, "invalid params: " + err.Error()})
		return
	case err != nil:
		s.srv.log.Error("tools/list failed", "error", err)
		s.respondError(rp, env.id, &rpcError{codeInternalError, "internal error: tools/list: " + err.Error()})
		return
	}
	// The response is built in one buffer of the right size: a page of a
	// thousand tools is a few hundred KiB, too big for the pool.
	size := len(env.id) + len(next) + 64
	for _, t := range tools {
		size += len(t) + 1
	}
	var bp *[]byte
	var b []byte
	if size <= maxPooled {
		bp = getBuf()
		b = *bp
	} else {
		b = make([]byte, 0, size)
	}
	b = appendResponseHead(b, env.id)
	b = append(b, `,"result":{"tools":[`...)
	n := 0
	for _, t := range tools {
		mark := len(b)
		if n > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendObject(b, t); !ok {
			b = b[:mark]
			s.srv.log.Error("tools/list: dropped a tool that is not a JSON object", "tool", string(t))
			continue
		}
		n++
	}
	b = append(b, ']')
	if next != "" {
		b = append(b, `,"nextCursor":`...)
		b = appendString(b, next)
	}
	b = append(b, "}}"...)
	s.respond(rp, b)
	if bp != nil {
		*bp = b
		putBuf(bp)
	}
}

// send builds a message in a pooled buffer and writes it to out.
func (s *Session) send(out Sink, build func([]byte) []byte) {
	bp := getBuf()
	*bp = build(*bp)
	s.write(out, *bp)
	putBuf(bp)
}

func (s *Session) write(out Sink, msg []byte) {
	if err := out.Write(msg); err != nil && s.writeFailed.CompareAndSwap(false, true) {
		s.srv.log.Error("writing to the client failed", "error", err)
		if s.onWriteError != nil {
			s.onWriteError(err)
		}
	}
}

func (s *Session) respond(rp reply, msg []byte) {
	if rp.batch != nil {
		rp.batch.add(msg)
		return
	}
	s.write(rp.out, msg)
}

func (s *Session) respondResult(rp reply, id, result []byte) {
	bp := getBuf()
	*bp = appendResult(*bp, id, result)
	s.respond(rp, *bp)
	putBuf(bp)
}

func (s *Session) respondError(rp reply, id []byte, e *rpcError) {
	bp := getBuf()
	*bp = appendError(*bp, id, e)
	s.respond(rp, *bp)
	putBuf(bp)
}

// batchReply gathers the responses to a batch into one JSON array.
type batchReply struct {
	s   *Session
	out Sink
	mu  sync.Mutex
	buf []byte
}

func (br *batchReply) add(msg []byte) {
	br.mu.Lock()
	if len(br.buf) == 0 {
		br.buf = append(br.buf, '[')
	} else {
		br.buf = append(br.buf, ',')
	}
	br.buf = append(br.buf, msg...)
	br.mu.Unlock()
}

// flush writes the array; a batch of notifications gets no response at all.
func (br *batchReply) flush() {
	br.mu.Lock()
	defer br.mu.Unlock()
	if len(br.buf) == 0 {
		return
	}
	br.s.write(br.out, append(br.buf, ']'))
}

// toolsChanged is the catalog's change callback. It never blocks: the
// notifier goroutine writes, and a burst while a write is due coalesces.
func (s *Session) toolsChanged() {
	s.pending.Add(1)
	select {
	case s.changed <- struct{}{}:
	default: // already due
		s.pending.Add(-1)
	}
}

func (s *Session) notifier() {
	defer s.work.Done()
	for {
		select {
		case <-s.done:
			return
		case <-s.changed:
			if s.state.Load() >= stateInitialized {
				s.write(s.notify, []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
			}
			s.idle()
		}
	}
}

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

// drain waits until no call is in flight and no notification is due, or
// until ctx ends (it then returns ctx's error). Graceful shutdown calls it
// after the transport has stopped taking requests.
func (s *Session) drain(ctx context.Context) error {
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

// initialized reports whether the session has answered initialize.
func (s *Session) initialized() bool { return s.state.Load() >= stateInitialized }
