package streamable

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// get opens a stream: the session's own, or with Last-Event-ID the one the
// client lost, replayed from after that event.
func (h *httpHandler) get(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "text", "event-stream") {
		httpError(w, http.StatusNotAcceptable, nil, jsonrpc.CodeInvalidRequest, "not acceptable: the Accept header must list text/event-stream")
		return
	}
	hs := h.lookup(w, r)
	if hs == nil {
		return
	}
	defer hs.leave()
	streamID, after, resume := uint64(0), uint64(0), false
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		var ok bool
		streamID, after, ok = parseEventID(last)
		hs.mu.Lock()
		known := streamID < hs.nextStream
		hs.mu.Unlock()
		if !ok || !known {
			httpError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "bad request: Last-Event-ID "+strconv.Quote(last)+" names no event of this session")
			return
		}
		resume = true
	}
	c := newSSEConn(w)
	defer c.close()
	defer hs.detach(streamID, c)
	if c.open() != nil {
		return
	}
	h.opts.Meter.Streams(+1)
	defer h.opts.Meter.Streams(-1)
	if !hs.attach(streamID, after, resume, c) {
		return
	}
	var tick <-chan time.Time
	if ka := h.opts.KeepAlive; ka > 0 {
		t := time.NewTicker(ka)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-c.end:
			return
		case <-r.Context().Done():
			h.log.Debug("SSE stream closed by the client", "session", hs.id[:8], "stream", streamID)
			return
		case <-tick:
			if c.write([]byte(": keepalive\n\n")) != nil {
				return
			}
		}
	}
}

// attach replays what the client missed on a stream to c, then makes c the
// stream's connection, replacing any earlier one. Without resume it
// replays the events never written to a connection. It returns false when
// nothing more will come (the stream is complete).
func (hs *httpSession) attach(streamID, after uint64, resume bool, c *sseConn) bool {
	hs.mu.Lock()
	st := hs.streams[streamID]
	if st == nil { // a completed POST stream: replay only
		frames, lost := hs.ring.since(streamID, after)
		hs.mu.Unlock()
		if hs.primes() && c.write(appendPriming(nil, streamID, after)) != nil {
			return false
		}
		hs.replay(streamID, frames, lost, c)
		return false
	}
	hs.mu.Unlock()
	st.mu.Lock()
	if !resume {
		after = st.sent
	}
	hs.mu.Lock()
	frames, lost := hs.ring.since(streamID, after)
	hs.mu.Unlock()
	ok := !hs.primes() || c.write(appendPriming(nil, streamID, after)) == nil
	ok = ok && hs.replay(streamID, frames, lost, c)
	old := st.conn
	if ok && !st.done {
		st.conn = c
		if n := len(frames); n > 0 {
			st.sent = max(st.sent, seqOf(frames[n-1]))
		}
	} else {
		ok = false
	}
	st.mu.Unlock()
	if old != nil && old != c {
		old.finish()
	}
	return ok
}

// seqOf reads the seq back from a frame ("id: <stream>_<seq>\n...").
func seqOf(frame []byte) uint64 {
	line, _, _ := strings.Cut(string(frame), "\n")
	_, seq, _ := parseEventID(strings.TrimPrefix(line, "id: "))
	return seq
}

func (hs *httpSession) replay(streamID uint64, frames [][]byte, lost bool, c *sseConn) bool {
	if lost {
		hs.h.log.Warn("a resumed stream lost events: the replay buffer had evicted them",
			"session", hs.id[:8], "stream", streamID, "hint", "raise the replay buffer")
	}
	for _, f := range frames {
		if c.write(f) != nil {
			return false
		}
	}
	return true
}

// detach forgets c as its stream's connection.
func (hs *httpSession) detach(streamID uint64, c *sseConn) {
	hs.mu.Lock()
	st := hs.streams[streamID]
	hs.mu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	if st.conn == c {
		st.conn = nil
	}
	st.mu.Unlock()
}

// delete ends a session at the client's request.
func (h *httpHandler) delete(w http.ResponseWriter, r *http.Request) {
	hs := h.lookup(w, r)
	if hs == nil {
		return
	}
	hs.leave()
	h.closeSession(hs, "client sent DELETE")
	w.WriteHeader(http.StatusNoContent)
}
