package mcp

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
	"golang.org/x/time/rate"
)

// call is a long call in flight. For a tools/call one allocation holds its
// state, its tool.Call and what its response needs; the other long calls
// (resources/read, prompts/get, ...) keep what is theirs in op.
type call struct {
	s      *Session
	ctx    context.Context
	cancel context.CancelFunc
	key    string // in the call table
	id     []byte // raw id, owned
	rp     reply  // where the response goes
	op     callOp // nil for a tools/call, whose request is tc
	tc     tool.Call
	start  time.Time // when the tools/call came, if anyone wants it (observe)
	// st is set for a request of the stateless revision (its _meta's
	// capabilities and log level); nil for a request of the session.
	st *stateless
	// round counts the input rounds of a stateless request before this
	// one (from its requestState).
	round int
	// own: the result is the host's own (an InputRequiredResult), not a
	// provider's: it is spliced as it is.
	own  bool
	slot bool // it holds one of the table's slots
	// slotless: it only waits for another call, so it takes no slot
	// (holding one could starve the call it waits for).
	slotless bool
	// detached: a call that never finishes by itself (subscriptions/listen)
	// no longer counts among the session's pending work once it is set
	// up, so that Drain does not wait for it; cancelling it makes it
	// pending again, until it has finished (reattach).
	detached atomic.Bool
	// cancelled is set, under the table's mu, when the client cancelled
	// the request or the session closed: its response is then not sent.
	cancelled bool

	// task, set for a tools/call that may go on as a task (the client
	// accepts one and the tool supports it), is its life as a task
	// (tasks.go).
	task *callTask

	mu       sync.Mutex // serializes the call's notifications
	finished bool       // the call returned: no more notifications
	// taskRun, once the call goes on as a task, takes its progress and logs
	// (they become the task's status message) instead of the client.
	taskRun *tasks.Run
	// early is the last progress of a call that may become a task, reported
	// before it is one (the client asked for no notifications): the task
	// starts with it as its status message.
	early    tool.Progress
	hasEarly bool
	token    []byte  // the progressToken; nil when none was given
	last     float64 // the last progress sent
	sentAny  bool    // whether any progress was sent
	// flood paces the call's notifications (Options.NotificationRate),
	// made at the first; dropped counts those it refused.
	flood   *rate.Limiter
	dropped int
}

// callParams are the params of tools/call: namedParams, and what its
// _meta carries.
type callParams struct {
	namedParams
	token []byte // _meta.progressToken; nil when absent
	// traceParent and traceState are _meta's W3C trace context, unchecked
	// (setTrace checks them); "" when absent.
	traceParent, traceState string
}

func (p callParams) decode(method string, raw []byte) (callParams, *jsonrpc.Error) {
	var err *jsonrpc.Error
	if p.namedParams, err = p.namedParams.decode(method, raw); err != nil {
		return p, err
	}
	p.token = jsonrpc.Member(p.meta, "progressToken")
	p.traceParent, _ = jsonrpc.Unquote(jsonrpc.Member(p.meta, "traceparent"))
	p.traceState, _ = jsonrpc.Unquote(jsonrpc.Member(p.meta, "tracestate"))
	return p, nil
}

// run waits for a slot, runs the call and answers it. A call whose
// provider needs the client's input goes on through inputRounds: on a
// goroutine of its own when the session has a read loop, so that the
// worker running it is free again (the client's answers come through that
// loop, which may be waiting for a free worker).
func (c *call) run() {
	s := c.s
	if !s.srv.awaitReady(c.ctx, "a request") || !c.slotless && !c.takeSlot() {
		c.finish(nil, c.ctx.Err())
		return
	}
	var res json.RawMessage
	var err error
	if c.task != nil {
		// A call that may become a task must not hold this worker (nor
		// the request it serves) once it is one: it goes on on the
		// provider's goroutine, or one of its own.
		c.task.arm(c)
		s.srv.catalog.StartCall(c.ctx, &c.tc, c.started)
		<-c.task.answered // the worker's end may end the request (a stateless POST)
		return
	}
	if c.op == nil {
		res, err = tool.Await(c.ctx, s.srv.catalog.StartCall, &c.tc)
	} else {
		res, err = c.op.exec(c, nil)
	}
	if err != nil && needsInput(err) {
		if c.st == nil {
			c.inputRounds(res, err, s.loop)
		} else {
			c.statelessInput(err, false)
		}
		return
	}
	c.finish(res, err)
}

// takeSlot waits for one of the table's slots. It reports false when the
// call is cancelled first.
func (c *call) takeSlot() bool {
	slots := c.s.calls.slots
	select {
	case slots <- struct{}{}:
		c.slot = true
		return true
	default: // all slots busy: wait, unless cancelled meanwhile
	}
	select {
	case slots <- struct{}{}:
		c.slot = true
		return true
	case <-c.ctx.Done():
		return false
	}
}

// dropSlot gives the call's slot back (its provider is not working while
// the client is asked).
func (c *call) dropSlot() {
	if c.slot {
		c.slot = false
		<-c.s.calls.slots
	}
}

// started is the done of a call started without a worker waiting for it
// (inline over stdio, or one that may become a task), called on
// the provider's goroutine. A provider that needs the client's input is
// rare: only then is the call handed to a goroutine of its own, which may
// wait for the client.
func (c *call) started(res json.RawMessage, err error) {
	if c.task != nil && c.task.claim(c, res, err) {
		return
	}
	if err != nil && needsInput(err) {
		if c.st == nil {
			c.inputRounds(res, err, true)
		} else {
			c.statelessInput(err, true)
		}
		return
	}
	c.finish(res, err)
}

// exec runs the request again with the client's answers.
func (c *call) exec(in *tool.Input) (json.RawMessage, error) {
	if c.op != nil {
		return c.op.exec(c, in)
	}
	c.tc.Input = in
	return tool.Await(c.ctx, c.s.srv.catalog.StartCall, &c.tc)
}

// leave takes the call out of its session: its slot, its entry in the
// call table, its notifications to the client. It reports whether the
// call was cancelled (its response is not sent), and returns what must
// run once the response is written: the call then no longer counts among
// the session's work.
func (c *call) leave() (cancelled bool, done func()) {
	s := c.s
	if c.slot {
		c.slot = false
		<-s.calls.slots
	}
	c.mu.Lock()
	c.finished = true
	c.mu.Unlock()
	s.calls.mu.Lock()
	delete(s.calls.inflight, c.key)
	cancelled = c.cancelled || c.ctx.Err() != nil
	pending := !c.detached.Swap(false) // under the lock reattach takes
	s.calls.mu.Unlock()
	br := c.rp.batch
	return cancelled, func() {
		if br != nil {
			br.done() // after the response joined the batch's
		}
		if c.task != nil {
			close(c.task.answered)
		}
		if pending {
			s.idle()
		}
		s.work.Done()
	}
}

// finish answers the call with what the catalog returned and retires it.
func (c *call) finish(res json.RawMessage, err error) {
	s := c.s
	cancelled, done := c.leave()
	defer done()
	if c.op == nil {
		defer c.ended(res, err, cancelled, false)
	}
	c.cancel()
	if e, ok := c.op.(opEnder); ok {
		e.end(c, err)
	}
	if cancelled {
		if c.rp.obs != nil {
			s.endRequest(c.rp.obs, true)
		}
		if c.op == nil {
			s.srv.log.Debug("call cancelled", "id", string(c.id), "tool", c.tc.Name)
		} else {
			s.srv.log.Debug("request cancelled", "id", string(c.id))
		}
		return
	}

	bp := jsonrpc.GetBuf()
	defer jsonrpc.PutBuf(bp)
	b := *bp
	switch {
	case c.op != nil:
		b = c.op.answer(b, c, res, err)
	case err == nil:
		b = jsonrpc.AppendResultHead(b, c.id)
		mark := len(b)
		var ok bool
		if b, ok = jsonrpc.AppendObject(b, res); !ok {
			s.srv.log.Error("a tool returned an invalid result", "tool", c.tc.Name, "result", string(res))
			b = append(b[:mark], tool.ErrorResult("tool "+strconv.Quote(c.tc.Name)+" returned an invalid result (not a JSON object)")...)
		}
		if c.st != nil && !c.own {
			b = markResult(b, mark)
		}
		b = append(b, '}')
		if c.rp.obs != nil && string(jsonrpc.Member(res, "isError")) == "true" {
			c.rp.obs.toolError()
		}
	case c.st != nil && missingCapability(err) != nil:
		b = jsonrpc.AppendError(b, c.id, c.rp.failed(missingCapability(err)))
	default:
		if res, rpcErr := tool.Outcome(err); rpcErr != nil {
			b = jsonrpc.AppendError(b, c.id, c.rp.failed(jsonrpc.NewError(rpcErr.Code, rpcErr.Message)))
		} else {
			b = jsonrpc.AppendResultHead(b, c.id)
			mark := len(b)
			b = append(b, res...)
			if c.st != nil {
				b = markResult(b, mark)
			}
			b = append(b, '}')
		}
	}
	*bp = b
	s.respond(c.rp, b)
}

// progress is the call's tool.Call.Progress: it sends
// notifications/progress, dropping values that do not increase.
func (c *call) progress(p tool.Progress) {
	if !finite(p.Progress) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taskRun != nil {
		c.taskRun.Progress(progressMessage(p))
		return
	}
	if c.token == nil { // a call that takes progress only in case it becomes a task (startTaskable)
		c.early, c.hasEarly = p, true // formatted only if it does
		return
	}
	if c.finished || (c.sentAny && p.Progress <= c.last) {
		return
	}
	if !c.paced() {
		return
	}
	c.last, c.sentAny = p.Progress, true
	bp := jsonrpc.GetBuf()
	b := jsonrpc.AppendNotificationHead(*bp, "notifications/progress")
	b = append(b, `,"params":{"progressToken":`...)
	b = append(b, c.token...)
	b = append(b, `,"progress":`...)
	b = jsonrpc.AppendNumber(b, p.Progress)
	if p.Total != 0 && finite(p.Total) {
		b = append(b, `,"total":`...)
		b = jsonrpc.AppendNumber(b, p.Total)
	}
	if p.Message != "" && (c.st != nil || c.s.life.version.Load() != vOriginal) {
		b = append(b, `,"message":`...)
		b = jsonrpc.AppendString(b, p.Message)
	}
	b = append(b, "}}"...)
	*bp = b
	c.s.write(c.rp.out, b)
	jsonrpc.PutBuf(bp)
}

// paced reports whether the call may send one more notification now
// (Options.NotificationRate), counting it dropped if not. c.mu must be
// held.
func (c *call) paced() bool {
	if c.flood == nil {
		r := c.s.srv.tuned().notifyRate
		c.flood = rate.NewLimiter(r, int(r))
	}
	if c.flood.Allow() {
		return true
	}
	c.dropped++
	return false
}

// log is the call's tool.Call.Log: it sends notifications/message when the
// level passes the session's threshold.
func (c *call) log(l tool.Log) {
	lv := levelIndex(l.Level)
	if lv < 0 {
		c.s.srv.log.Warn("dropped a tool log with an unknown level", "level", l.Level)
		return
	}
	switch {
	case c.st != nil && (c.st.level < 0 || lv < c.st.level):
		return // a stateless request gets logs only at the level its _meta asks
	case c.st == nil && lv < int(c.s.level.Load()):
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taskRun != nil {
		c.taskRun.Progress(logMessage(lv, l))
		return
	}
	if c.finished || !c.paced() {
		return
	}
	bp := jsonrpc.GetBuf()
	defer jsonrpc.PutBuf(bp)
	b := jsonrpc.AppendNotificationHead(*bp, "notifications/message")
	b = append(b, `,"params":{"level":"`...)
	b = append(b, levels[lv]...)
	b = append(b, '"')
	if l.Logger != "" {
		b = append(b, `,"logger":`...)
		b = jsonrpc.AppendString(b, l.Logger)
	}
	b = append(b, `,"data":`...)
	if len(l.Data) == 0 {
		b = append(b, "null"...)
	} else {
		var ok bool
		if b, ok = jsonrpc.AppendJSON(b, l.Data); !ok {
			c.s.srv.log.Warn("dropped a tool log whose data is not JSON", "data", string(l.Data))
			return
		}
	}
	b = append(b, "}}"...)
	*bp = b
	c.s.write(c.rp.out, b)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
