package streamable

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"

	"golang.org/x/time/rate"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// A legacySession is one session of the deprecated HTTP+SSE transport
// (protocol 2024-11-05): GET /sse opens an event stream whose first event,
// "endpoint", names the URL to POST messages to; every response and
// notification then arrives on that stream as a "message" event. It is a
// [mcp.Transport] served by [mcp.Server.ServeSession] like stdio: only the framing differs.
// The session lives as long as its stream.
type legacySession struct {
	h       *httpHandler
	id      string
	caller  mcp.Caller // who opened it (OAuth); only they may post to it
	conn    *sseConn
	limiter *rate.Limiter
	in      chan []byte   // POSTed messages, to Read
	gone    chan struct{} // closed by end: Read returns io.EOF
	once    sync.Once

	mu   sync.Mutex
	sess *mcp.Session
}

var _ mcp.Transport = (*legacySession)(nil)

func (ls *legacySession) Read() ([]byte, error) {
	select {
	case b := <-ls.in:
		return b, nil
	case <-ls.gone:
		return nil, io.EOF
	}
}

func (ls *legacySession) Write(msg []byte) error {
	bp := jsonrpc.GetBuf()
	*bp = appendEvent(*bp, "message", nil, msg)
	err := ls.conn.write(*bp)
	jsonrpc.PutBuf(bp)
	return err
}

// end stops the session: Serve sees EOF, cancels what still runs, returns.
func (ls *legacySession) end() { ls.once.Do(func() { close(ls.gone) }) }

func (ls *legacySession) session() *mcp.Session {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.sess
}

// legacyOpen serves GET /sse: the session's stream, for as long as it lasts.
func (h *httpHandler) legacyOpen(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "text", "event-stream") {
		httpError(w, http.StatusNotAcceptable, nil, jsonrpc.CodeInvalidRequest, "not acceptable: the Accept header must list text/event-stream")
		return
	}
	ls := &legacySession{
		h:       h,
		id:      newSessionID(),
		caller:  callerOf(r),
		conn:    newSSEConn(w),
		limiter: rate.NewLimiter(h.limit, h.opts.RateBurst),
		in:      make(chan []byte),
		gone:    make(chan struct{}),
	}
	// Counted once registered, under the admission lock (admit.go), so
	// that concurrent opens cannot overshoot MaxSessions.
	if !h.admit(func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.legacy[ls.id] = ls
		return true
	}) {
		h.opts.Meter.LimitHit(LimitSessions)
		httpError(w, http.StatusServiceUnavailable, nil, jsonrpc.CodeInvalidRequest, h.fullMessage())
		return
	}
	h.opts.Meter.Sessions(TransportSSE, +1)
	h.opts.Meter.Streams(+1)
	defer ls.conn.close()
	defer func() {
		h.mu.Lock()
		delete(h.legacy, ls.id)
		h.mu.Unlock()
		h.opts.Meter.Sessions(TransportSSE, -1)
		h.opts.Meter.Streams(-1)
	}()
	if ls.conn.open() != nil {
		return
	}
	if ls.conn.write([]byte("event: endpoint\ndata: "+PathMessage+"?sessionId="+ls.id+"\n\n")) != nil {
		return
	}
	h.log.Debug("HTTP+SSE session started", "session", ls.id[:8])
	// The client hanging up ends the session like end does.
	stop := context.AfterFunc(r.Context(), ls.end)
	defer stop()
	err := h.srv.ServeSession(context.Background(), ls, func(s *mcp.Session) {
		s.RefuseStateless() // HTTP+SSE is the transport of 2024-11-05 sessions
		s.SetPeer(mcp.Peer{SessionID: ls.id, Remote: r.RemoteAddr, Caller: ls.caller, Transport: "sse"})
		ls.mu.Lock()
		ls.sess = s
		ls.mu.Unlock()
	})
	h.log.Debug("HTTP+SSE session ended", "session", ls.id[:8], "error", err)
}

// legacyPost serves POST /message?sessionId=ID: the message goes to the
// session, and the answer comes on its stream; the POST itself gets 202.
func (h *httpHandler) legacyPost(w http.ResponseWriter, r *http.Request) {
	if !checkContentType(w, r) {
		return
	}
	id := r.URL.Query().Get("sessionId")
	if id == "" {
		httpError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "bad request: missing sessionId query parameter (GET "+PathSSE+" first)")
		return
	}
	h.mu.Lock()
	ls := h.legacy[id]
	h.mu.Unlock()
	if ls == nil {
		httpError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, "session not found: it is unknown or ended; open a new one with GET "+PathSSE)
		return
	}
	if !sameCaller(ls.caller, callerOf(r)) {
		httpError(w, http.StatusForbidden, nil, jsonrpc.CodeInvalidRequest, "forbidden: the session belongs to another caller")
		return
	}
	bp := h.readBody(w, r)
	if bp == nil {
		return
	}
	msg := bytes.Clone(*bp) // Serve reads it after this handler returns
	jsonrpc.PutBuf(bp)
	if perr := jsonrpc.Check(msg); perr != nil {
		httpError(w, http.StatusBadRequest, nil, perr.Code, perr.Message)
		return
	}
	if n, first := countRequests(msg); n > 0 && !h.allow(w, ls.limiter, n, first) {
		return
	}
	select {
	case ls.in <- msg:
		w.WriteHeader(http.StatusAccepted)
	case <-ls.gone:
		httpError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, "session ended; open a new one with GET "+PathSSE)
	case <-r.Context().Done():
	}
}
