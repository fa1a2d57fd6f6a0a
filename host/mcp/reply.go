package mcp

import (
	"sync"
	"sync/atomic"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// Replies: how a session writes to its client. A request's response goes
// where its reply says (the transport's sink, or a batch's array); a
// notification or a request of the server goes to a sink. Every handler
// answers through these, below it; a write that fails is logged once and
// reported to the transport (SessionConn.OnWriteError).

// reply routes a request's response: to out, or into a batch's response.
type reply struct {
	out   Sink
	batch *batchReply
	// obs is the request's telemetry (spans.go); nil when off.
	obs *requestObs
}

// send builds a message in a pooled buffer and writes it to out.
func (s *Session) send(out Sink, build func([]byte) []byte) {
	bp := jsonrpc.GetBuf()
	*bp = build(*bp)
	s.write(out, *bp)
	jsonrpc.PutBuf(bp)
}

func (s *Session) write(out Sink, msg []byte) {
	if err := out.Write(msg); err != nil && s.writeFailed.CompareAndSwap(false, true) {
		s.srv.log.Error("writing to the client failed", "error", err)
		if s.conn.OnWriteError != nil {
			s.conn.OnWriteError(err)
		}
	}
}

func (s *Session) respond(rp reply, msg []byte) {
	if rp.obs != nil {
		defer s.endRequest(rp.obs, false)
	}
	if rp.batch != nil {
		rp.batch.add(msg)
		return
	}
	s.write(rp.out, msg)
}

func (s *Session) respondResult(rp reply, id, result []byte) {
	bp := jsonrpc.GetBuf()
	*bp = jsonrpc.AppendResult(*bp, id, result)
	s.respond(rp, *bp)
	jsonrpc.PutBuf(bp)
}

func (s *Session) respondError(rp reply, id []byte, e *jsonrpc.Error) {
	bp := jsonrpc.GetBuf()
	*bp = jsonrpc.AppendError(*bp, id, rp.failed(e))
	s.respond(rp, *bp)
	jsonrpc.PutBuf(bp)
}

// batchReply gathers the responses to a batch into one JSON array.
type batchReply struct {
	s    *Session
	out  Sink
	left atomic.Int64 // the batch's long calls not yet finished
	mu   sync.Mutex
	buf  []byte
}

// done marks one of the batch's long calls finished (its response, if
// any, added); the last one writes the batch's response.
func (br *batchReply) done() {
	if br.left.Add(-1) == 0 {
		br.flush()
		br.s.idle() // the batch's response is out
	}
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
