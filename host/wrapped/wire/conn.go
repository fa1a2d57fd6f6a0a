// Package wire is the client side of MCP's JSON-RPC on the wire: a Conn
// sends requests and notifications to a server and matches its answers,
// over a child's stdin and stdout (Stdio, Stream), Streamable HTTP
// (Streamable) or the HTTP+SSE transport of MCP 2024-11-05 (SSE). It is
// what host/wrapped speaks to a wrapped server with.
//
// Why our own and not the go-sdk client: the wrapper only forwards. The
// go-sdk client decodes every message into its typed structs and encodes
// the result again, allocating about 130 KB per call (97 % its JSON
// decoder's buffers, measured in issue 12): a wrapped server's echo cost
// 18 times the server's own CPU, and the client alone 276–299 µs of CPU
// per call where this one spends 29–38 µs (bench_test.go in host/wrapped,
// 16 in flight). A Conn decodes only the envelope (id, method, error) and hands
// results and params on as the server wrote them (json.RawMessage), reads
// each transport on one goroutine, matches ids in a map without a
// goroutine per call, and writes the messages queued meanwhile in one
// write. What MCP asks of a client beyond the envelope (initialize, the
// lists, the notifications a bridge passes on) stays with the caller.
//
// Bounds: each message the server sends is at most Options.MaxMessage
// (over it on stdio the connection ends, naming the limit: the line cannot
// be attributed to a call; over HTTP only that request fails), and at
// most Options.MaxInFlight calls wait at once.
package wire

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Defaults of Options.
const (
	// DefaultMaxMessage is the host's own bound on a result
	// (pluginclient.DefaultMaxResultSize): a larger one could not reach
	// a client anyway.
	DefaultMaxMessage = 16 << 20
	// DefaultMaxInFlight is the wrapper's bound on requests held at once
	// (exchanges), so that this one never refuses first.
	DefaultMaxInFlight = 1024
)

// JSON-RPC error codes a client answers with.
const (
	CodeInvalidParams  = -32602
	CodeMethodNotFound = -32601
	CodeInternalError  = -32603
)

// Error is a JSON-RPC error object: the server's answer to a request that
// failed, or the client's to a server's request it cannot serve.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Options are what a Conn does with what the server sends besides answers,
// and its bounds.
type Options struct {
	// Notify gets each notification, in the order the server sent them
	// and before any answer sent after it (progress before the result),
	// on the transport's reading goroutine: it must not block.
	Notify func(method string, params json.RawMessage)
	// Request answers a server's request (sampling, elicitation, roots),
	// each on its own goroutine: an answer may wait on a client. nil
	// answers each with method not found. ping is answered by the Conn.
	Request func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// MaxMessage bounds each message the server sends (default
	// DefaultMaxMessage).
	MaxMessage int
	// MaxInFlight bounds the calls waiting for an answer at once
	// (default DefaultMaxInFlight).
	MaxInFlight int
	// KeepAlive, when over 0, pings the server this often: a server that
	// does not answer within the same time ends the connection.
	KeepAlive time.Duration
}

// transport carries messages between a Conn and its server.
type transport interface {
	// start begins reading the server's messages into c (c.receive) and
	// reports the end of the connection with c.fail; ctx bounds what it
	// waits for to begin (the SSE transport's endpoint).
	start(ctx context.Context, c *Conn) error
	// send writes one message. id is that of a call, whose answer send
	// may read itself (Streamable HTTP answers in the POST's response):
	// it returns once c has it; 0 for a notification or an answer.
	send(ctx context.Context, msg []byte, id int64) error
	// initialized is told the protocol version agreed on (HTTP sends it
	// in a header and opens its GET stream from then on).
	initialized(version string)
	// close ends the connection.
	close() error
}

// Conn is one connection to a server.
type Conn struct {
	t    transport
	opts Options

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply
	err     error         // why the connection ended; set once
	done    chan struct{} // closed when it ends
	serving context.Context
	stop    context.CancelFunc // ends the server's requests being answered
}

type reply struct {
	result json.RawMessage
	err    error
}

// newConn starts a Conn over t.
func newConn(ctx context.Context, t transport, o *Options) (*Conn, error) {
	c := &Conn{t: t, pending: make(map[int64]chan reply), done: make(chan struct{})}
	if o != nil {
		c.opts = *o
	}
	c.opts.MaxMessage = cmp.Or(c.opts.MaxMessage, DefaultMaxMessage)
	c.opts.MaxInFlight = cmp.Or(c.opts.MaxInFlight, DefaultMaxInFlight)
	c.serving, c.stop = context.WithCancel(context.Background())
	if err := t.start(ctx, c); err != nil {
		c.stop()
		return nil, err
	}
	if c.opts.KeepAlive > 0 {
		go c.keepAlive()
	}
	return c, nil
}

// Initialized tells the transport the protocol version agreed on at
// initialize (before the client sends notifications/initialized).
func (c *Conn) Initialized(version string) { c.t.initialized(version) }

// Call sends a request and returns the result as the server wrote it. When
// ctx ends first the server is told (notifications/cancelled) and Call
// returns ctx's error.
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	if len(c.pending) >= c.opts.MaxInFlight {
		c.mu.Unlock()
		return nil, fmt.Errorf("over %d requests to the server in flight at once", c.opts.MaxInFlight)
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	msg, err := encode(id, method, params)
	if err == nil {
		err = c.t.send(ctx, msg, id)
	}
	if err != nil {
		c.forget(id)
		if ctx.Err() != nil {
			c.cancelled(id, ctx)
			return nil, ctx.Err()
		}
		select { // the answer may have come before the error (a stream cut after it)
		case r := <-ch:
			return r.result, r.err
		default:
		}
		return nil, err
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		if c.forget(id) {
			c.cancelled(id, ctx)
			return nil, ctx.Err()
		}
		r := <-ch // answered meanwhile
		return r.result, r.err
	}
}

// forget drops the call id from those waiting; false when it was answered
// (or failed) already.
func (c *Conn) forget(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// cancelled tells the server the request id is given up.
func (c *Conn) cancelled(id int64, ctx context.Context) {
	reason := "the client gave up the request"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		reason = "the request timed out"
	}
	nctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.Notify(nctx, "notifications/cancelled", map[string]any{"requestId": id, "reason": reason})
}

// Notify sends a notification.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	if err := c.Err(); err != nil {
		return err
	}
	msg, err := encode(0, method, params)
	if err != nil {
		return err
	}
	return c.t.send(ctx, msg, 0)
}

// Done is closed when the connection has ended; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, or nil while it lasts.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// ErrClosed is the end of a connection the client closed.
var ErrClosed = errors.New("the connection to the server is closed")

// Close ends the connection (a stdio server is asked to exit, then made
// to; an HTTP session is deleted).
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	return c.t.close()
}

// fail ends the connection with err (the first reason wins): the calls
// waiting get it.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	pending := c.pending
	c.pending = map[int64]chan reply{}
	c.mu.Unlock()
	for _, ch := range pending {
		ch <- reply{err: err}
	}
	c.stop()
	close(c.done)
}

// waiting reports whether the call id still waits for its answer.
func (c *Conn) waiting(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	return ok
}

// envelope is what a Conn decodes of a message; the rest stays raw.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
}

// receive handles one message (or batch) of the server. It does not
// retain msg.
func (c *Conn) receive(msg []byte) {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 {
		return
	}
	if msg[0] == '[' { // a batch (MCP 2025-03-26)
		var batch []json.RawMessage
		if json.Unmarshal(msg, &batch) == nil {
			for _, m := range batch {
				c.receive(m)
			}
		}
		return
	}
	var e envelope
	if err := json.Unmarshal(msg, &e); err != nil {
		return // not JSON-RPC: nothing to answer or attribute
	}
	switch {
	case e.Method == "" && len(e.ID) > 0:
		c.answer(e)
	case e.Method != "" && (len(e.ID) == 0 || string(e.ID) == "null"):
		if c.opts.Notify != nil {
			c.opts.Notify(e.Method, e.Params)
		}
	case e.Method != "":
		c.serve(e)
	}
}

// answer hands a response to the call waiting for it.
func (c *Conn) answer(e envelope) {
	id, err := strconv.ParseInt(string(e.ID), 10, 64)
	if err != nil {
		return // not an id of ours
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !ok {
		return // given up, or never asked
	}
	if e.Error != nil {
		ch <- reply{err: e.Error}
		return
	}
	ch <- reply{result: orEmpty(e.Result)}
}

// serve answers a server's request on its own goroutine.
func (c *Conn) serve(e envelope) {
	if e.Method == "ping" {
		c.respond(e.ID, json.RawMessage("{}"), nil)
		return
	}
	go func() {
		var res json.RawMessage
		err := error(&Error{Code: CodeMethodNotFound, Message: "the client does not serve " + e.Method})
		if c.opts.Request != nil {
			res, err = c.opts.Request(c.serving, e.Method, e.Params)
		}
		c.respond(e.ID, res, err)
	}()
}

// respond sends the answer to the server's request id.
func (c *Conn) respond(id json.RawMessage, result json.RawMessage, err error) {
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	if err != nil {
		var we *Error
		if !errors.As(err, &we) {
			we = &Error{Code: CodeInternalError, Message: err.Error()}
		}
		b, _ := json.Marshal(we)
		buf.WriteString(`,"error":`)
		buf.Write(b)
	} else {
		buf.WriteString(`,"result":`)
		buf.Write(orEmpty(result))
	}
	buf.WriteString("}")
	ctx, cancel := context.WithTimeout(c.serving, time.Minute)
	defer cancel()
	_ = c.t.send(ctx, buf.Bytes(), 0)
}

// orEmpty is raw, or an empty object when the server (or the client) gave
// none.
func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// encode is a request (id > 0) or notification, params given as JSON
// (json.RawMessage, passed as is) or a value to encode.
func encode(id int64, method string, params any) ([]byte, error) {
	var raw []byte
	switch p := params.(type) {
	case nil:
	case json.RawMessage:
		raw = p
	default:
		var err error
		if raw, err = json.Marshal(p); err != nil {
			return nil, fmt.Errorf("the params of %s: %w", method, err)
		}
	}
	m, _ := json.Marshal(method)
	buf := make([]byte, 0, 48+len(m)+len(raw))
	buf = append(buf, `{"jsonrpc":"2.0"`...)
	if id > 0 {
		buf = append(buf, `,"id":`...)
		buf = strconv.AppendInt(buf, id, 10)
	}
	buf = append(buf, `,"method":`...)
	buf = append(buf, m...)
	if len(raw) > 0 {
		buf = append(buf, `,"params":`...)
		buf = append(buf, raw...)
	}
	return append(buf, '}'), nil
}

// keepAlive pings the server every KeepAlive; a ping that fails ends the
// connection.
func (c *Conn) keepAlive() {
	t := time.NewTicker(c.opts.KeepAlive)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(c.serving, c.opts.KeepAlive)
		_, err := c.Call(ctx, "ping", nil)
		cancel()
		if err != nil && c.Err() == nil {
			c.fail(fmt.Errorf("the server did not answer ping within %v: %w", c.opts.KeepAlive, err))
			_ = c.t.close()
			return
		}
	}
}
