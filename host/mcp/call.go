package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"sync"

	"github.com/plughost/plughost/host/tool"
)

// request is a tools/call in flight: one allocation holds its state, its
// tool.Call and what its response needs.
type request struct {
	s      *Session
	ctx    context.Context
	cancel context.CancelFunc
	key    string // in s.inflight
	id     []byte // raw id, owned
	rp     reply  // where the response goes
	call   tool.Call
	// cancelled is set, under s.mu, when the client cancelled the request
	// or the session closed: its response is then not sent.
	cancelled bool

	mu       sync.Mutex // serializes the request's notifications
	finished bool       // the call returned: no more notifications
	token    []byte     // the progressToken; nil when none was given
	last     float64    // the last progress sent
	sentAny  bool       // whether any progress was sent
}

var emptyObject = []byte("{}")

// startCall checks a tools/call's params and registers it in flight. It
// returns the function that runs it, or nil after answering with an error.
func (s *Session) startCall(ctx context.Context, rp reply, env envelope) func() {
	var nameRaw, args, token []byte
	if env.params != nil {
		it := objIter{b: env.params}
		for {
			k, v, ok := it.next()
			if !ok {
				break
			}
			switch {
			case keyIs(k, "name"):
				nameRaw = v
			case keyIs(k, "arguments"):
				args = v
			case keyIs(k, "_meta"):
				if v[0] != '{' {
					s.respondError(rp, env.id, &rpcError{codeInvalidParams, "invalid params: _meta must be an object"})
					return nil
				}
				token = member(v, "progressToken")
			}
		}
	}
	if string(args) == "null" {
		args = nil // some clients send null for "no arguments": read it as {}
	}
	name, ok := unquote(nameRaw)
	switch {
	case !ok:
		s.respondError(rp, env.id, &rpcError{codeInvalidParams, "invalid params: tools/call needs name, a string"})
		return nil
	case args != nil && args[0] != '{':
		s.respondError(rp, env.id, &rpcError{codeInvalidParams, "invalid params: arguments must be an object"})
		return nil
	case token != nil && !validID(token):
		s.respondError(rp, env.id, &rpcError{codeInvalidParams, "invalid params: progressToken must be a string or an integer"})
		return nil
	}
	// msg's bytes belong to the transport: copy what outlives this call.
	keep := make([]byte, 0, len(env.id)+len(args)+len(token))
	keep = append(keep, env.id...)
	keep = append(keep, args...)
	keep = append(keep, token...)
	id := keep[:len(env.id):len(env.id)]
	if args != nil {
		args = keep[len(id) : len(id)+len(args) : len(id)+len(args)]
	} else {
		args = emptyObject
	}
	if token != nil {
		token = keep[len(keep)-len(token):]
	}

	r := &request{s: s, key: idKey(id), id: id, rp: rp, token: token}
	r.ctx, r.cancel = context.WithCancel(ctx)
	r.call = tool.Call{Name: name, Arguments: args, Log: r.log}
	if token != nil {
		r.call.Progress = r.progress
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		r.cancel()
		return nil
	}
	if _, dup := s.inflight[r.key]; dup {
		s.mu.Unlock()
		r.cancel()
		s.respondError(rp, id, &rpcError{codeInvalidRequest, "invalid request: request id " + string(id) + " is already in use"})
		return nil
	}
	s.inflight[r.key] = r
	s.work.Add(1)
	s.pending.Add(1)
	s.mu.Unlock()
	return r.run
}

// run waits for a slot, runs the call and answers it.
func (r *request) run() {
	s := r.s
	defer s.work.Done()
	defer s.idle()
	var res json.RawMessage
	var err error
	acquired := true
	select {
	case s.sem <- struct{}{}:
	default: // all slots busy: wait, unless cancelled meanwhile
		select {
		case s.sem <- struct{}{}:
		case <-r.ctx.Done():
			acquired = false
		}
	}
	if acquired {
		res, err = s.srv.catalog.CallTool(r.ctx, &r.call)
		<-s.sem
	}
	r.mu.Lock()
	r.finished = true
	r.mu.Unlock()
	s.mu.Lock()
	delete(s.inflight, r.key)
	cancelled := r.cancelled || r.ctx.Err() != nil
	s.mu.Unlock()
	r.cancel()
	if cancelled {
		s.srv.log.Debug("call cancelled", "id", string(r.id), "tool", r.call.Name)
		return
	}

	bp := getBuf()
	defer putBuf(bp)
	b := *bp
	switch {
	case err == nil:
		b = appendResponseHead(b, r.id)
		b = append(b, `,"result":`...)
		mark := len(b)
		var ok bool
		if b, ok = appendObject(b, res); !ok {
			s.srv.log.Error("a tool returned an invalid result", "tool", r.call.Name, "result", string(res))
			b = append(b[:mark], tool.ErrorResult("tool "+strconv.Quote(r.call.Name)+" returned an invalid result (not a JSON object)")...)
		}
		b = append(b, '}')
	case errors.Is(err, tool.ErrUnknownTool):
		b = appendError(b, r.id, &rpcError{codeInvalidParams, "invalid params: " + err.Error()})
	default:
		b = appendResult(b, r.id, tool.ErrorResult(err.Error()))
	}
	*bp = b
	s.respond(r.rp, b)
}

// progress is the call's tool.Call.Progress: it sends
// notifications/progress, dropping values that do not increase.
func (r *request) progress(p tool.Progress) {
	if !finite(p.Progress) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished || (r.sentAny && p.Progress <= r.last) {
		return
	}
	r.last, r.sentAny = p.Progress, true
	bp := getBuf()
	b := append(*bp, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`...)
	b = append(b, r.token...)
	b = append(b, `,"progress":`...)
	b = appendNumber(b, p.Progress)
	if p.Total != 0 && finite(p.Total) {
		b = append(b, `,"total":`...)
		b = appendNumber(b, p.Total)
	}
	if p.Message != "" && r.s.version.Load() != vOriginal {
		b = append(b, `,"message":`...)
		b = appendString(b, p.Message)
	}
	b = append(b, "}}"...)
	*bp = b
	r.s.write(r.rp.out, b)
	putBuf(bp)
}

// log is the call's tool.Call.Log: it sends notifications/message when the
// level passes the session's threshold.
func (r *request) log(l tool.Log) {
	lv := levelIndex(l.Level)
	if lv < 0 {
		r.s.srv.log.Warn("dropped a tool log with an unknown level", "level", l.Level)
		return
	}
	if lv < int(r.s.level.Load()) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	bp := getBuf()
	defer putBuf(bp)
	b := append(*bp, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"`...)
	b = append(b, levels[lv]...)
	b = append(b, '"')
	if l.Logger != "" {
		b = append(b, `,"logger":`...)
		b = appendString(b, l.Logger)
	}
	b = append(b, `,"data":`...)
	if len(l.Data) == 0 {
		b = append(b, "null"...)
	} else {
		var ok bool
		if b, ok = appendJSON(b, l.Data); !ok {
			r.s.srv.log.Warn("dropped a tool log whose data is not JSON", "data", string(l.Data))
			return
		}
	}
	b = append(b, "}}"...)
	*bp = b
	r.s.write(r.rp.out, b)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendNumber appends f as encoding/json would.
func appendNumber(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, 64)
}
