package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Streamable connects to endpoint, a server of MCP's Streamable HTTP
// transport, through hc: each message is POSTed, and a call's answer read
// from the POST's response (JSON, or an event stream that may carry the
// server's requests and notifications first); once initialized, a GET
// stream carries what the server sends outside requests. The session id
// the server gives at initialize (Mcp-Session-Id) and the protocol version
// (MCP-Protocol-Version) go with every request after it; Close deletes the
// session. A session the server ended (404) ends the connection.
func Streamable(endpoint string, hc *http.Client, o *Options) (*Conn, error) {
	return newConn(context.Background(), &streamable{url: endpoint, hc: hc}, o)
}

type streamable struct {
	url string
	hc  *http.Client
	c   *Conn

	mu       sync.Mutex
	session  string
	version  string
	stopGET  context.CancelFunc
	isClosed bool
}

func (t *streamable) start(_ context.Context, c *Conn) error {
	t.c = c
	return nil
}

// headers adds the session's headers to h; false when there is no session.
func (t *streamable) headers(h http.Header) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.version != "" {
		h.Set("MCP-Protocol-Version", t.version)
	}
	if t.session != "" {
		h.Set("Mcp-Session-Id", t.session)
	}
	return t.session != ""
}

func (t *streamable) send(ctx context.Context, msg []byte, id int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	inSession := t.headers(req.Header)
	resp, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		t.mu.Lock()
		if t.session == "" {
			t.session = s
		}
		t.mu.Unlock()
	}
	if err := t.status(resp, inSession); err != nil {
		return err
	}
	max := t.c.opts.MaxMessage
	switch mediaType(resp) {
	case "text/event-stream":
		err := readSSE(resp.Body, max, func(ev event) bool {
			if ev.name == "" || ev.name == "message" {
				t.c.receive(ev.data)
			}
			return id == 0 || t.c.waiting(id)
		})
		if err == nil && id != 0 && t.c.waiting(id) {
			err = errors.New("the server's event stream ended before its answer")
		}
		return err
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
		if err != nil {
			return fmt.Errorf("read the server's answer: %w", err)
		}
		if len(body) > max {
			return fmt.Errorf("the server's answer is over %d bytes, the limit of a wrapped server's message", max)
		}
		t.c.receive(body)
		return nil
	}
	if id != 0 && resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("the server answered with Content-Type %q, neither JSON nor an event stream", resp.Header.Get("Content-Type"))
	}
	return nil
}

// status is the error of a response that is not a success; a 404 to a
// request of the session means the server ended it, which ends the
// connection.
func (t *streamable) status(resp *http.Response, inSession bool) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	err := statusError(resp)
	if resp.StatusCode == http.StatusNotFound && inSession {
		err = fmt.Errorf("the server ended the session: %w", err)
		t.c.fail(err)
	}
	return err
}

// statusError names a response's status, with the start of its body.
func statusError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if s := strings.TrimSpace(string(bytes.ToValidUTF8(b, nil))); s != "" {
		return fmt.Errorf("the server answered %s: %s", resp.Status, s)
	}
	return fmt.Errorf("the server answered %s", resp.Status)
}

func mediaType(resp *http.Response) string {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt
}

func (t *streamable) initialized(version string) {
	ctx, cancel := context.WithCancel(context.Background())
	t.mu.Lock()
	t.version = version
	if t.isClosed || t.stopGET != nil {
		t.mu.Unlock()
		cancel()
		return
	}
	t.stopGET = cancel
	t.mu.Unlock()
	go t.listen(ctx)
}

// maxGETFailures is how many times in a row the GET stream may fail to
// open before the connection is taken for lost.
const maxGETFailures = 5

// listen holds the GET stream open, reopening it (from the last event it
// got) when it ends; a server that answers 405 offers none.
func (t *streamable) listen(ctx context.Context) {
	var last string
	for failures := 0; ; {
		got, err := t.get(ctx, &last)
		if ctx.Err() != nil || err == errNoStream {
			return
		}
		if got {
			failures = 0
		} else if failures++; failures >= maxGETFailures {
			t.c.fail(fmt.Errorf("the server's event stream (GET) failed %d times in a row: %v", failures, err))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(failures) * 500 * time.Millisecond):
		}
	}
}

var errNoStream = errors.New("the server offers no GET stream")

// get reads one GET stream to its end; got says whether any event came.
func (t *streamable) get(ctx context.Context, last *string) (got bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	inSession := t.headers(req.Header)
	resp, err := t.hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusMethodNotAllowed {
		return false, errNoStream
	}
	if err := t.status(resp, inSession); err != nil {
		return false, err
	}
	err = readSSE(resp.Body, t.c.opts.MaxMessage, func(ev event) bool {
		got = true
		if ev.id != "" {
			*last = ev.id
		}
		if ev.name == "" || ev.name == "message" {
			t.c.receive(ev.data)
		}
		return true
	})
	return got, err
}

// close stops the GET stream and deletes the session.
func (t *streamable) close() error {
	t.mu.Lock()
	t.isClosed = true
	stop, session := t.stopGET, t.session
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	if session == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.url, nil)
	if err != nil {
		return err
	}
	t.headers(req.Header)
	resp, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// SSE connects to endpoint, a server of the HTTP+SSE transport of MCP
// 2024-11-05, through hc: a GET opens the event stream, whose first event
// names the URL to POST messages to; everything the server sends comes on
// the stream, whose end ends the connection. ctx bounds the wait for that
// first event.
func SSE(ctx context.Context, endpoint string, hc *http.Client, o *Options) (*Conn, error) {
	return newConn(ctx, &sse{url: endpoint, hc: hc}, o)
}

type sse struct {
	url  string
	hc   *http.Client
	post string // where messages go, from the endpoint event
	stop context.CancelFunc
}

func (t *sse) start(ctx context.Context, c *Conn) error {
	sctx, stop := context.WithCancel(context.Background())
	t.stop = stop
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, t.url, nil)
	if err != nil {
		stop()
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	opened := make(chan error, 1)
	go func() { opened <- t.open(req, c) }()
	select {
	case err := <-opened:
		if err != nil {
			stop()
		}
		return err
	case <-ctx.Done():
		stop()
		return ctx.Err()
	}
}

// open opens the event stream and reads it: opened with the endpoint
// event (nil) or without (its error), then read to its end on.
func (t *sse) open(req *http.Request, c *Conn) error {
	resp, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return statusError(resp)
	}
	events := newEvents(resp.Body, c.opts.MaxMessage)
	var endpoint string
	err = events.read(func(ev event) bool {
		if ev.name != "endpoint" {
			return true
		}
		endpoint = string(ev.data)
		return false
	})
	if endpoint == "" {
		resp.Body.Close()
		return fmt.Errorf("the server's event stream ended before it named its endpoint: %v", err)
	}
	u, err := url.Parse(t.url)
	if err == nil {
		u, err = u.Parse(strings.TrimSpace(endpoint))
	}
	if err != nil {
		resp.Body.Close()
		return fmt.Errorf("the server's endpoint %q: %w", endpoint, err)
	}
	t.post = u.String()
	go func() {
		defer resp.Body.Close()
		err := events.read(func(ev event) bool {
			if ev.name == "" || ev.name == "message" {
				c.receive(ev.data)
			}
			return true
		})
		c.fail(fmt.Errorf("the server's event stream ended: %v", cmpErr(err, io.EOF)))
	}()
	return nil
}

func cmpErr(err, def error) error {
	if err == nil {
		return def
	}
	return err
}

func (t *sse) initialized(string) {}

func (t *sse) send(ctx context.Context, msg []byte, _ int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.post, bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return statusError(resp)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	return nil
}

func (t *sse) close() error {
	t.stop()
	return nil
}

// event is one server-sent event.
type event struct {
	name, id string
	data     []byte
}

// readSSE reads server-sent events from r, handing each to each until it
// returns false or r ends (nil at its end). An event's data is bounded by
// max, over which reading stops with an error naming the limit.
func readSSE(r io.Reader, max int, each func(event) bool) error {
	return newEvents(r, max).read(each)
}

// events reads a stream of server-sent events, in parts.
type events struct {
	sc  *bufio.Scanner
	max int
}

func newEvents(r io.Reader, max int) *events {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), max+64)
	return &events{sc: sc, max: max}
}

// read hands each event to each until it returns false (nil) or the
// stream ends (nil at its end).
func (es *events) read(each func(event) bool) error {
	var ev event
	var data bytes.Buffer
	dispatch := func() bool {
		defer func() { ev = event{}; data.Reset() }()
		if data.Len() == 0 {
			return true
		}
		ev.data = bytes.TrimSuffix(data.Bytes(), []byte("\n"))
		return each(ev)
	}
	tooLong := func() error {
		return fmt.Errorf("the server sent an event over %d bytes, the limit of a wrapped server's message", es.max)
	}
	for es.sc.Scan() {
		line := es.sc.Bytes()
		if len(line) == 0 {
			if !dispatch() {
				return nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.name = string(value)
		case "id":
			ev.id = string(value)
		case "data":
			if data.Len()+len(value) > es.max {
				return tooLong()
			}
			data.Write(value)
			data.WriteByte('\n')
		}
	}
	if err := es.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return tooLong()
		}
		return err
	}
	dispatch()
	return nil
}
