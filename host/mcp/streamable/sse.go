package streamable

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// sseConn is one HTTP response carrying SSE events.
type sseConn struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	mu   sync.Mutex
	shut bool          // the handler returned (or is about to): no more writes
	end  chan struct{} // closed by finish: the handler should return
	once sync.Once
}

func newSSEConn(w http.ResponseWriter) *sseConn {
	return &sseConn{w: w, rc: http.NewResponseController(w), end: make(chan struct{})}
}

var errConnShut = errors.New("stream closed")

// writeTimeout bounds one write to a client: a stalled reader loses its
// stream instead of holding up the session.
const writeTimeout = 10 * time.Second

// open writes the response head of an event stream.
func (c *sseConn) open() error {
	h := c.w.Header()
	h["Content-Type"] = hdrSSE
	h["Cache-Control"] = hdrNoCache
	h.Set("X-Accel-Buffering", "no")
	c.w.WriteHeader(http.StatusOK)
	return c.write(nil)
}

// write writes bytes (nil just flushes).
func (c *sseConn) write(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shut {
		return errConnShut
	}
	c.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if len(b) > 0 {
		if _, err := c.w.Write(b); err != nil {
			return err
		}
	}
	return c.rc.Flush()
}

// finish asks the handler to end the response.
func (c *sseConn) finish() { c.once.Do(func() { close(c.end) }) }

// close is called by the handler before it returns: later writes fail.
func (c *sseConn) close() {
	c.mu.Lock()
	c.shut = true
	c.rc.SetWriteDeadline(time.Time{}) // the connection may serve more requests
	c.mu.Unlock()
	c.finish()
}

// appendEvent appends one SSE event carrying msg.
func appendEvent(b []byte, name string, id []byte, msg []byte) []byte {
	if id != nil {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, '\n')
	for { // our messages are one line; split anything else as SSE requires
		line, rest, more := strings.Cut(string(msg), "\n")
		b = append(b, "data: "...)
		b = append(b, line...)
		b = append(b, '\n')
		if !more {
			break
		}
		msg = []byte(rest)
	}
	return append(b, '\n')
}

// primeRetryMs is the reconnection delay, in milliseconds, the priming
// event asks of a client that loses a stream.
const primeRetryMs = "1000"

// appendPriming appends the event that opens an SSE stream (2025-11-25):
// an id and empty data, so a client that loses the stream before any
// message can resume it with Last-Event-ID, and the retry delay. Resuming
// after seq replays every event the stream had after the priming.
func appendPriming(b []byte, streamID, seq uint64) []byte {
	b = append(b, "id: "...)
	b = append(b, eventID(streamID, seq)...)
	b = append(b, "\nretry: "+primeRetryMs+"\ndata: \n\n"...)
	return b
}

func eventID(streamID, seq uint64) []byte {
	b := strconv.AppendUint(nil, streamID, 10)
	b = append(b, '_')
	return strconv.AppendUint(b, seq, 10)
}

// parseEventID reverses eventID.
func parseEventID(s string) (streamID, seq uint64, ok bool) {
	a, b, found := strings.Cut(s, "_")
	if !found {
		return 0, 0, false
	}
	streamID, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return streamID, seq, err1 == nil && err2 == nil
}

// ring keeps the newest events within a count and a byte budget of its
// own, and within the server-wide budget of every session's rings
// together (Options.ReplayBudget): total counts their bytes. When an event
// would take total past budget, the ring receiving it drops its own oldest
// events first. The session writing is the one growing, and dropping its
// events costs no lock but its own; a session whose ring is empty still
// keeps its newest event, so total may pass budget by one event per
// session. Sessions are bounded (MaxSessions), so total is too.
type ring struct {
	ev          []event
	start, n    int
	bytes       int
	maxBytes    int
	total       *atomic.Int64 // every ring's bytes; the handler's
	budget      int64         // the most total should hold
	evictedUpTo uint64        // the highest seq evicted
}

type event struct {
	stream, seq uint64
	frame       []byte // the whole SSE event, ready to write
}

func (r *ring) push(e event) {
	size := len(e.frame)
	for r.n > 0 && (r.n == len(r.ev) || r.bytes+size > r.maxBytes || r.total.Load()+int64(size) > r.budget) {
		old := &r.ev[r.start]
		r.evictedUpTo = old.seq
		r.bytes -= len(old.frame)
		r.total.Add(-int64(len(old.frame)))
		*old = event{}
		r.start = (r.start + 1) % len(r.ev)
		r.n--
	}
	r.ev[(r.start+r.n)%len(r.ev)] = e
	r.n++
	r.bytes += size
	r.total.Add(int64(size))
}

// release gives the ring's bytes back to the server-wide budget, when its
// session ends.
func (r *ring) release() {
	r.total.Add(-int64(r.bytes))
	r.bytes = 0
}

// since returns the frames of stream after seq, and whether some may be
// lost (evicted) between seq and the first one kept.
func (r *ring) since(streamID, seq uint64) (frames [][]byte, lost bool) {
	for i := range r.n {
		e := &r.ev[(r.start+i)%len(r.ev)]
		if e.stream == streamID && e.seq > seq {
			frames = append(frames, e.frame)
		}
	}
	return frames, r.evictedUpTo > seq
}

// lastSeq is the seq of the newest event ever recorded.
func (r *ring) lastSeq() uint64 {
	if r.n == 0 {
		return r.evictedUpTo
	}
	return r.ev[(r.start+r.n-1)%len(r.ev)].seq
}
