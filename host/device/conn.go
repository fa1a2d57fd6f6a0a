package device

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/tool"
)

// Limits on what one device may hold open.
const (
	maxServices  = 256 // services in one register
	maxTextTasks = 16  // text tasks received or being answered
)

// conn is one connected device. Once it registers services it is a
// tool.Provider, published under its name.
type conn struct {
	s      *Server
	nc     net.Conn
	serial uint64
	logp   atomic.Pointer[hclog.Logger] // the first register names the device in it
	born   time.Time
	addr   string // addrKey of the remote address

	authed   atomic.Bool // AUTH accepted (always true without tokens)
	admitted atomic.Bool // out of the waiting room (see admission.go)

	// Under the server's mutex.
	waiting bool // in the server's waiting room
	evicted bool // pushed out of it: may no longer be admitted
	counted bool // counted among the server's admitted connections

	dlmu       sync.Mutex // orders setting the read deadline against evict
	evictedWhy string     // why the connection was evicted, once it was

	wmu  sync.Mutex // serializes writes
	wbuf []byte

	mu        sync.Mutex
	closed    bool
	voice     string                   // voice id from AUTH
	name      string                   // provider name, once registered
	mcpTask   string                   // task id of the last register: calls use it
	services  []*service               // sorted by name
	byName    map[string]*service      // the same, by name
	pending   map[string]chan []byte   // calls awaiting a result, by call_id
	calls     uint64                   // calls sent so far
	texts     map[string]*bytes.Buffer // text tasks being received, by task id
	answering int                      // text tasks ended and being answered (under mu)

	ctx    context.Context // ends when the connection does
	cancel context.CancelFunc
	done   chan struct{} // closed when the connection is gone
	tasks  sync.WaitGroup
}

var _ tool.Provider = (*conn)(nil)

func newConn(s *Server, nc net.Conn, serial uint64) *conn {
	c := &conn{
		s:       s,
		nc:      nc,
		serial:  serial,
		born:    time.Now(),
		addr:    addrKey(nc.RemoteAddr()),
		byName:  map[string]*service{},
		pending: map[string]chan []byte{},
		texts:   map[string]*bytes.Buffer{},
		done:    make(chan struct{}),
	}
	c.authed.Store(len(s.opts.Tokens) == 0)
	l := s.log.With("remote", nc.RemoteAddr().String())
	c.logp.Store(&l)
	return c
}

// log is the connection's logger (safe for concurrent use).
func (c *conn) log() hclog.Logger { return *c.logp.Load() }

// serve reads and handles frames until the device goes away, then
// withdraws its tools and ends its calls and text tasks.
func (c *conn) serve(ctx context.Context) {
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.log().Debug("device connected")
	reason := c.readLoop()
	c.cancel()
	c.mu.Lock()
	c.closed = true
	name := c.name
	c.mu.Unlock()
	close(c.done) // in-flight calls end with ErrDisconnected
	c.nc.Close()
	if name != "" {
		c.s.opts.Publisher.Remove(name)
	}
	c.tasks.Wait()
	c.s.release(c, name)
	if c.admitted.Load() {
		c.log().Info("device disconnected", "reason", reason)
	} else {
		// Never admitted: not a device yet, and a flood of such
		// connections must not flood the log (evictions are summed up
		// by noteEviction).
		c.log().Debug("connection closed before it was admitted", "reason", reason)
	}
}

// readLoop returns why the connection ends.
func (c *conn) readLoop() string {
	limit := c.s.opts.MaxFrame
	if len(c.s.opts.Tokens) > 0 {
		limit = c.s.opts.MaxFrameBeforeAuth
	}
	r := &frameReader{c: c}
	dec := NewDecoder(r, limit)
	r.dec = dec
	for {
		f, err := dec.Next()
		var ne net.Error
		var plain tls.RecordHeaderError
		switch {
		case err == nil:
		case errors.Is(err, ErrMalformedFrame):
			c.statusError(SystemTask, 0, err.Error())
			continue
		case errors.Is(err, ErrFrameTooLarge):
			msg := fmt.Sprintf("frame too large: the limit is %d bytes of payload; closing", limit)
			if !c.admitted.Load() && limit < c.s.opts.MaxFrame {
				msg = fmt.Sprintf("frame too large: the limit before AUTH is %d bytes of payload; closing", limit)
			}
			c.s.limitHit(LimitDeviceFrameSize)
			c.statusError(SystemTask, 0, msg)
			return err.Error()
		case errors.As(err, &ne) && ne.Timeout():
			c.dlmu.Lock()
			msg := c.evictedWhy
			c.dlmu.Unlock()
			if msg == "" {
				msg = r.timedOut()
				if r.last != deadlineIdle {
					c.s.limitHit(LimitDeviceTimeout)
				}
			}
			c.statusError(SystemTask, 0, msg)
			return msg
		case errors.Is(err, io.EOF):
			return "the device closed the connection"
		case errors.As(err, &plain) && plain.Conn != nil:
			return c.refusePlain(plain.Conn)
		default:
			return err.Error()
		}
		r.frameSince = time.Time{} // the next frame's time starts afresh
		if c.log().IsTrace() {
			c.log().Trace("frame from device", "frame", f.String())
		}
		if reason := c.handle(f); reason != "" {
			return reason
		}
		if limit != c.s.opts.MaxFrame && c.admitted.Load() {
			limit = c.s.opts.MaxFrame
			dec.SetMaxPayload(limit)
		}
	}
}

// notTLS is the STATUS error of a device that spoke plain frames to a
// TLS listener (Options.TLSConfig).
const notTLS = "this port speaks TLS: connect with TLS; closing"

// refusePlain answers a device whose first bytes were not a TLS
// handshake, on the connection under TLS (tls.RecordHeaderError.Conn),
// in plain frames it can read, and returns why the connection ends.
func (c *conn) refusePlain(nc net.Conn) string {
	if b, err := AppendFrame(nil, Frame{Type: TypeStatus, Task: SystemTask, Payload: []byte("##ERROR:" + notTLS)}); err == nil {
		nc.SetWriteDeadline(time.Now().Add(c.s.opts.WriteTimeout))
		nc.Write(b)
	}
	return "the device spoke plain frames to the TLS listener"
}

// handle serves one frame. It returns why the connection must close, or "".
func (c *conn) handle(f Frame) string {
	if !c.authed.Load() && f.Type != TypeAuth && f.Type != TypeStatus {
		c.statusError(f.Task, f.Seq, "not authenticated: send AUTH first")
		return ""
	}
	if len(c.s.opts.Tokens) == 0 && !c.admitted.Load() && admits(f.Type) {
		if reason := c.s.admit(c); reason != "" {
			c.statusError(f.Task, f.Seq, reason)
			return reason
		}
	}
	switch f.Type {
	case TypeAuth:
		return c.auth(f)
	case TypeStatus:
		return c.status(f)
	case TypeMCP:
		c.mcp(f)
	case TypeText:
		c.text(f)
	case TypeEnd:
		c.end(f)
	case TypeAudio, TypeSpeak:
		c.statusError(f.Task, f.Seq, f.Type.String()+" frames are not supported")
	default:
		c.statusError(f.Task, f.Seq, fmt.Sprintf("unknown frame type 0x%02x", byte(f.Type)))
	}
	return ""
}

// status handles STATUS: ##PING is answered, ##DISCONNECT hangs up.
func (c *conn) status(f Frame) string {
	switch p := string(bytes.TrimSpace(f.Payload)); p {
	case "##PING":
		c.status0(f.Task, f.Seq, "##INFO:PONG")
	case "##DISCONNECT":
		return "the device sent ##DISCONNECT"
	default:
		c.log().Debug("status from device", "status", p)
	}
	return ""
}

// statusError sends a STATUS ##ERROR:msg.
func (c *conn) statusError(task string, seq int, msg string) {
	c.log().Debug("status error to device", "error", msg)
	c.status0(task, seq, "##ERROR:"+msg)
}

func (c *conn) status0(task string, seq int, payload string) {
	c.write(Frame{Type: TypeStatus, Task: task, Seq: seq, Payload: []byte(sanitizeText(payload))})
}

// write sends one frame; on failure it closes the connection, which ends
// the read loop.
func (c *conn) write(f Frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b, err := AppendFrame(c.wbuf[:0], f)
	if err != nil {
		return err // a bug of ours: every payload is escaped before
	}
	c.wbuf = b
	if c.log().IsTrace() {
		c.log().Trace("frame to device", "frame", f.String())
	}
	c.nc.SetWriteDeadline(time.Now().Add(c.s.opts.WriteTimeout))
	if _, err := c.nc.Write(b); err != nil {
		c.nc.Close()
		return err
	}
	return nil
}

// sanitizeText makes text safe as a payload: "##END" would end the frame
// early, so a zero-width space is put inside it.
func sanitizeText(s string) string {
	return strings.ReplaceAll(s, endMarker, "#\u200b#END")
}

// escapeJSON makes compact JSON safe as a payload: "##END" can only occur
// inside a JSON string, where '#' may be written \u0023.
func escapeJSON(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte(endMarker), []byte(`#\u0023END`))
}

// Name is the provider name: "device-" and the AUTH voice id (sanitized),
// or "device-<n>" for a device that gave none.
func (c *conn) Name() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name
}

// Tools returns the registered services as MCP tools.
func (c *conn) Tools() []tool.Def {
	c.mu.Lock()
	defer c.mu.Unlock()
	defs := make([]tool.Def, len(c.services))
	for i, s := range c.services {
		defs[i] = tool.Def{Name: s.name, JSON: s.json}
	}
	return defs
}

// CallTool is StartCall waited for (tool.Await).
func (c *conn) CallTool(ctx context.Context, call *tool.Call) (json.RawMessage, error) {
	return tool.Await(ctx, c.StartCall, call)
}

// StartCall is the device's one call path (tool.Starter): on a goroutine
// of its own it sends a call frame and waits for the device's result,
// which done gets. The catalog has checked call.Arguments against the
// service's schema. A disconnect is tool.ErrGone, no result in time
// tool.ErrTimedOut, each naming the tool and the device.
func (c *conn) StartCall(ctx context.Context, call *tool.Call, done func(json.RawMessage, error)) {
	go func() {
		res, err := c.call(ctx, call.Name, call.Arguments)
		switch {
		case errors.Is(err, ErrDisconnected):
			err = tool.Errorf(tool.ErrGone, "tool %q of provider %q: %w", call.Name, c.Name(), err)
		case errors.Is(err, ErrCallTimeout):
			err = tool.Errorf(tool.ErrTimedOut, "tool %q of provider %q: %w", call.Name, c.Name(), err)
		}
		done(res, err)
	}()
}

var _ tool.Starter = (*conn)(nil)

// service returns the registered service of that name, or an error
// wrapping tool.ErrGone when the device no longer offers it.
func (c *conn) service(name string) (*service, error) {
	c.mu.Lock()
	svc := c.byName[name]
	c.mu.Unlock()
	if svc == nil {
		return nil, tool.Errorf(tool.ErrGone, "the device no longer offers %q", name)
	}
	return svc, nil
}

// call sends the call with a fresh call_id and waits for the result, the
// timeout, ctx or the end of the connection. args must be a JSON object
// (checked by the catalog, or by runToolUse for the device's own text
// tasks). Errors wrap tool.ErrGone (a service no longer offered),
// ErrDisconnected, ErrCallTimeout or ctx's error.
func (c *conn) call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if _, err := c.service(name); err != nil {
		return nil, err
	}
	var params bytes.Buffer
	if err := json.Compact(&params, args); err != nil {
		return nil, tool.Errorf(tool.ErrBadArguments, "invalid arguments: %v", err)
	}

	ch := make(chan []byte, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w before the call could be sent", ErrDisconnected)
	}
	c.calls++
	id := fmt.Sprintf("call_%03d", c.calls)
	c.pending[id] = ch
	task := c.mcpTask
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()

	msg, err := json.Marshal(struct {
		Type string      `json:"type"`
		Data callPayload `json:"data"`
	}{"call", callPayload{id, name, params.Bytes()}})
	if err != nil {
		return nil, err
	}
	if err := c.write(Frame{Type: TypeMCP, Task: task, Seq: 0, Payload: escapeJSON(msg)}); err != nil {
		return nil, fmt.Errorf("%w: sending call %s: %v", ErrDisconnected, id, err)
	}
	timer := time.NewTimer(c.s.opts.CallTimeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		return resultJSON(r), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		return nil, fmt.Errorf("%w: no result for call %s within %v", ErrCallTimeout, id, c.s.opts.CallTimeout)
	case <-c.done:
		return nil, fmt.Errorf("%w before answering call %s", ErrDisconnected, id)
	}
}

type callPayload struct {
	CallID string          `json:"call_id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// mcp handles a type-6 frame: register or result.
func (c *conn) mcp(f Frame) {
	var msg struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(f.Payload, &msg); err != nil {
		c.statusError(f.Task, f.Seq, "MCP frame is not a JSON object {\"type\":…,\"data\":…}: "+err.Error())
		return
	}
	switch msg.Type {
	case "register":
		c.register(f, msg.Data)
	case "result":
		c.result(f, msg.Data)
	default:
		c.statusError(f.Task, f.Seq, fmt.Sprintf("unknown MCP message type %q (want register or result)", msg.Type))
	}
}

// result hands a call's result to the call waiting for it.
func (c *conn) result(f Frame, data json.RawMessage) {
	var res struct {
		CallID string          `json:"call_id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &res); err != nil || res.CallID == "" {
		c.statusError(f.Task, f.Seq, `result: "data" must hold "call_id" and "result"`)
		return
	}
	c.mu.Lock()
	ch := c.pending[res.CallID]
	delete(c.pending, res.CallID)
	c.mu.Unlock()
	if ch == nil {
		c.statusError(f.Task, f.Seq, fmt.Sprintf("result: no call %q is waiting (unknown, or it timed out)", res.CallID))
		return
	}
	ch <- res.Result
}

// resultJSON turns a device's result object into an MCP CallToolResult:
// success with a string → text; with a JSON object (or a string holding
// one) → structuredContent plus its text; failure → isError with the
// device's error.
func resultJSON(raw []byte) json.RawMessage {
	var r struct {
		Success *bool           `json:"success"`
		Data    json.RawMessage `json:"data"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Success == nil {
		return tool.ErrorResult(`the device sent a malformed result (want {"success": true|false, "data"|"error": …})`)
	}
	if !*r.Success {
		msg := jsonText(r.Error)
		if msg == "" {
			msg = "the device reported a failure without an error message"
		}
		return tool.ErrorResult(msg)
	}
	data := bytes.TrimSpace(r.Data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		json.Unmarshal(data, &s)
		if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
			return structured([]byte(t))
		}
		return tool.TextResult(s)
	}
	if len(data) > 0 && data[0] == '{' {
		return structured(data)
	}
	return tool.TextResult(jsonText(data))
}

// jsonText is a JSON string's value, or other JSON as compact text; ""
// for nothing or null.
func jsonText(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// structured is a result carrying obj as structuredContent and, for
// clients that read only content, as text.
func structured(obj []byte) json.RawMessage {
	var b bytes.Buffer
	json.Compact(&b, obj)
	type text struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	out, _ := json.Marshal(struct {
		Content           []text          `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}{[]text{{"text", b.String()}}, b.Bytes()})
	return out
}
