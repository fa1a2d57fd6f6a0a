package streamable

// What a request's headers and body must be before a message is read from
// it: the media types, the size limit and the deadline.

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// accepts reports whether the Accept header admits the media type
// "major/minor" (wildcards count).
func accepts(r *http.Request, major, minor string) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			mt = strings.TrimSpace(mt)
			maj, min, _ := strings.Cut(mt, "/")
			if (maj == "*" || strings.EqualFold(maj, major)) && (min == "*" || strings.EqualFold(min, minor)) {
				return true
			}
		}
	}
	return false
}

// checkContentType answers 415 unless the body is declared JSON.
func checkContentType(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "application/json" {
		return true
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return true
	}
	httpError(w, http.StatusUnsupportedMediaType, nil, jsonrpc.CodeInvalidRequest,
		"unsupported media type "+strconv.Quote(ct)+": POST a JSON-RPC message as application/json")
	return false
}

// readBody reads a POSTed body up to the limit into a pooled buffer (give
// it back with putBuf) within Options.BodyTimeout; on failure it has
// answered (413 over the limit, 408 past the deadline, 400 otherwise) and
// returns nil.
//
// A client that declares a body and then stalls or trickles must not
// hold the connection (or a buffer of the declared size) for ever: the
// connection's read deadline is set for the body, and lifted only once
// the whole body is in (a stream that follows must not be cut by it). On
// failure it stays: net/http then reads what is left of the body to
// reuse the connection, and without the deadline a trickle would hold
// it open past any bound (issue 31, attack 6); with it, that read fails
// at once and the connection closes.
func (h *httpHandler) readBody(w http.ResponseWriter, r *http.Request) *[]byte {
	limit := h.opts.MaxBodySize
	if r.ContentLength > limit {
		h.tooLarge(w)
		return nil
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(h.opts.BodyTimeout))
	bp := h.readBodyUnder(w, r, limit)
	if bp != nil {
		_ = rc.SetReadDeadline(time.Time{})
	} else {
		w.Header().Set("Connection", "close")
	}
	return bp
}

// readBodyUnder is readBody once the deadline is set.
func (h *httpHandler) readBodyUnder(w http.ResponseWriter, r *http.Request, limit int64) *[]byte {
	bp := jsonrpc.GetBuf()
	buf := *bp
	if n := int(r.ContentLength) + 1; n > cap(buf) { // +1 sees EOF without growing
		buf = make([]byte, 0, min(n, 64<<10)) // grown as the bytes arrive
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		*bp = buf
		if int64(len(buf)) > limit {
			jsonrpc.PutBuf(bp)
			h.tooLarge(w)
			return nil
		}
		if err == io.EOF {
			return bp
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			jsonrpc.PutBuf(bp)
			h.opts.Meter.LimitHit(LimitBodyTimeout)
			httpError(w, http.StatusRequestTimeout, nil, jsonrpc.CodeInvalidRequest, "request timeout: the body did not arrive within "+
				h.opts.BodyTimeout.String()+" ("+strconv.Itoa(len(buf))+" bytes came); send it at once")
			return nil
		}
		if err != nil {
			jsonrpc.PutBuf(bp)
			httpError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "bad request: reading the body: "+err.Error())
			return nil
		}
	}
}

// DefaultBodyTimeout is Options.BodyTimeout's default.
const DefaultBodyTimeout = 30 * time.Second

// jsonWriteTimeout bounds writing one JSON response to a client that does
// not read it.
const jsonWriteTimeout = 10 * time.Second

func (h *httpHandler) tooLarge(w http.ResponseWriter) {
	h.opts.Meter.LimitHit(LimitBodySize)
	w.Header().Set("Connection", "close")
	httpError(w, http.StatusRequestEntityTooLarge, nil, jsonrpc.CodeInvalidRequest,
		"request too large: the body exceeds the limit of "+strconv.FormatInt(h.opts.MaxBodySize, 10)+" bytes")
}
