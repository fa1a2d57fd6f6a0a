package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The load client speaks raw JSON-RPC: it builds each request from bytes and
// reads only a response's id on the hot path, so that it costs every server
// the same and as little as possible. Responses to the load's calls are
// checked with bytes.Contains (the echoed text must come back, no error);
// everything else (initialize, tools/list) is decoded fully.

// conn is one MCP connection of the load client.
type conn interface {
	// call sends a request with the given method and params (JSON) and
	// returns the whole response message.
	call(ctx context.Context, method string, params []byte) ([]byte, error)
	// notify sends a notification.
	notify(method string, params []byte) error
	// notifications delivers the server's notifications (method names); nil
	// when the transport has no server-to-client channel open.
	notifications() <-chan string
	close() error
}

// protocolVersion is the version the load client asks for.
const protocolVersion = "2025-11-25"

var initParams = []byte(`{"protocolVersion":"` + protocolVersion + `","capabilities":{},"clientInfo":{"name":"plughost-bench","version":"1"}}`)

// request builds one JSON-RPC request line (without the newline).
func request(id int64, method string, params []byte) []byte {
	b := make([]byte, 0, 48+len(method)+len(params))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"`...)
	b = append(b, method...)
	b = append(b, '"')
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

func notification(method string, params []byte) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","method":"`), method...)
	b = append(b, '"')
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// message is a JSON-RPC message decoded in full (off the hot path).
type message struct {
	ID     *json.RawMessage `json:"id"`
	Method string           `json:"method"`
	Result json.RawMessage  `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// scanID returns the id of a response quickly: the integer after the first
// `"id":`. ok is false when there is none or the message has a method (a
// notification or a request of the server), and the caller decodes in full.
func scanID(line []byte) (id int64, ok bool) {
	if bytes.Contains(line, []byte(`"method"`)) {
		return 0, false
	}
	i := bytes.Index(line, []byte(`"id":`))
	if i < 0 {
		return 0, false
	}
	rest := bytes.TrimLeft(line[i+5:], " ")
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 {
		return 0, false
	}
	id, err := strconv.ParseInt(string(rest[:n]), 10, 64)
	return id, err == nil
}

// resultOf decodes a response and returns its result, or its error as an
// error.
func resultOf(resp []byte) (json.RawMessage, error) {
	var m message
	if err := json.Unmarshal(resp, &m); err != nil {
		return nil, fmt.Errorf("response is not JSON: %w: %.200s", err, resp)
	}
	if m.Error != nil {
		return nil, fmt.Errorf("JSON-RPC error %d: %s", m.Error.Code, m.Error.Message)
	}
	if m.Result == nil {
		return nil, fmt.Errorf("response has no result: %.200s", resp)
	}
	return m.Result, nil
}

// stdioConn speaks newline-delimited JSON-RPC over a server's stdin and
// stdout. Calls may be made from many goroutines: one reader goroutine hands
// each response to its caller by id.
type stdioConn struct {
	w      io.WriteCloser
	nextID atomic.Int64
	notes  chan string

	wmu sync.Mutex
	bw  *bufio.Writer

	mu      sync.Mutex
	pending map[int64]chan []byte
	err     error // set when the reader stops
	done    chan struct{}
}

func newStdioConn(r io.Reader, w io.WriteCloser) *stdioConn {
	c := &stdioConn{
		w:       w,
		bw:      bufio.NewWriterSize(w, 64<<10),
		notes:   make(chan string, 256),
		pending: map[int64]chan []byte{},
		done:    make(chan struct{}),
	}
	go c.read(r)
	return c
}

func (c *stdioConn) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 256<<10)
	var err error
	for {
		var line []byte
		line, err = br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long message (a big tools/list page): gather it.
			buf := bytes.Clone(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		}
		if err != nil {
			break
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			continue
		}
		c.dispatch(bytes.Clone(line))
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the server closed its stdout")
	}
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.done)
}

func (c *stdioConn) dispatch(line []byte) {
	if id, ok := scanID(line); ok {
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- line
			return
		}
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return // not JSON: nothing to do with it
	}
	switch {
	case m.Method != "" && m.ID == nil:
		select {
		case c.notes <- m.Method:
		default: // nobody is listening; the load does not care
		}
	case m.Method != "":
		// A request of the server (ping): answer it.
		var reply []byte
		if m.Method == "ping" {
			reply = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{}}`, *m.ID)
		} else {
			reply = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"the bench client has no %s"}}`, *m.ID, m.Method)
		}
		_ = c.write(reply)
	case m.ID != nil:
		id, err := strconv.ParseInt(string(*m.ID), 10, 64)
		if err != nil {
			return
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- line
		}
	}
}

func (c *stdioConn) write(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.bw.Write(msg)
	c.bw.WriteByte('\n')
	return c.bw.Flush()
}

func (c *stdioConn) call(ctx context.Context, method string, params []byte) ([]byte, error) {
	id := c.nextID.Add(1)
	ch := make(chan []byte, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.write(request(id, method, params)); err != nil {
		return nil, fmt.Errorf("write %s: %w", method, err)
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-c.done:
		return nil, fmt.Errorf("%s: %w", method, c.err)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *stdioConn) notify(method string, params []byte) error {
	return c.write(notification(method, params))
}

func (c *stdioConn) notifications() <-chan string { return c.notes }

func (c *stdioConn) close() error { return c.w.Close() }

// httpConn speaks Streamable HTTP: one POST per message over keep-alive
// connections, the answer either application/json or an SSE stream that
// carries it.
type httpConn struct {
	url     string
	client  *http.Client
	nextID  atomic.Int64
	session atomic.Pointer[string]
}

func newHTTPConn(url string) *httpConn {
	tr := &http.Transport{
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &httpConn{url: url, client: &http.Client{Transport: tr}}
}

func (c *httpConn) post(ctx context.Context, msg []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s := c.session.Load(); s != nil {
		req.Header.Set("Mcp-Session-Id", *s)
		req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	}
	return c.client.Do(req)
}

func (c *httpConn) call(ctx context.Context, method string, params []byte) ([]byte, error) {
	id := c.nextID.Add(1)
	resp, err := c.post(ctx, request(id, method, params))
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("POST %s: %s: %s", method, resp.Status, bytes.TrimSpace(b))
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" && c.session.Load() == nil {
		c.session.Store(&s)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("POST %s: %w", method, err)
		}
		return b, nil
	}
	// An SSE stream: the response is the data of the event that carries our
	// id; read the stream to its end so that the connection is reused.
	var found []byte
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:")); ok {
			data = bytes.TrimSpace(data)
			if got, ok := scanID(data); ok && got == id && found == nil {
				found = bytes.Clone(data)
			}
		}
		if err != nil {
			break
		}
	}
	if found == nil {
		return nil, fmt.Errorf("POST %s: the event stream ended without the response", method)
	}
	return found, nil
}

func (c *httpConn) notify(method string, params []byte) error {
	resp, err := c.post(context.Background(), notification(method, params))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", method, resp.Status)
	}
	return nil
}

func (c *httpConn) notifications() <-chan string { return nil }

func (c *httpConn) close() error {
	if s := c.session.Load(); s != nil {
		req, err := http.NewRequest(http.MethodDelete, c.url, nil)
		if err == nil {
			req.Header.Set("Mcp-Session-Id", *s)
			if resp, err := c.client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}
	c.client.CloseIdleConnections()
	return nil
}

// initialize performs the MCP handshake and returns the server's result.
func initialize(ctx context.Context, c conn) (json.RawMessage, error) {
	resp, err := c.call(ctx, "initialize", initParams)
	if err != nil {
		return nil, err
	}
	res, err := resultOf(resp)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if err := c.notify("notifications/initialized", nil); err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	return res, nil
}

// listTools fetches every page of tools/list and returns the tool names.
func listTools(ctx context.Context, c conn) ([]string, error) {
	names, _, err := listToolsPages(ctx, c)
	return names, err
}

// listToolsPages is listTools that also counts the pages.
func listToolsPages(ctx context.Context, c conn) (names []string, pages int, err error) {
	cursor := ""
	for {
		params := []byte(`{}`)
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		resp, err := c.call(ctx, "tools/list", params)
		if err != nil {
			return nil, pages, err
		}
		pages++
		res, err := resultOf(resp)
		if err != nil {
			return nil, pages, fmt.Errorf("tools/list: %w", err)
		}
		var page struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return nil, pages, fmt.Errorf("tools/list: %w", err)
		}
		for _, t := range page.Tools {
			names = append(names, t.Name)
		}
		if page.NextCursor == "" {
			return names, pages, nil
		}
		cursor = page.NextCursor
	}
}

// listAllFast fetches every page of tools/list the way the load does:
// without decoding, taking the cursor from the text. It returns the page
// count; the caller checks the content with listToolsPages first.
func listAllFast(ctx context.Context, c conn) (pages int, err error) {
	params := []byte(`{}`)
	for {
		resp, err := c.call(ctx, "tools/list", params)
		if err != nil {
			return pages, err
		}
		pages++
		if bytes.Contains(resp, []byte(`"error":{`)) {
			return pages, fmt.Errorf("tools/list: %.200s", resp)
		}
		i := bytes.Index(resp, []byte(`"nextCursor":"`))
		if i < 0 {
			return pages, nil
		}
		cur := resp[i+len(`"nextCursor":"`):]
		j := bytes.IndexByte(cur, '"')
		if j < 0 {
			return pages, fmt.Errorf("tools/list: malformed nextCursor: %.200s", resp)
		}
		if j == 0 {
			return pages, nil
		}
		params = append(append([]byte(`{"cursor":"`), cur[:j]...), `"}`...)
	}
}

// echoCall is the load's tools/call: its params and the text that must come
// back.
type echoCall struct {
	params []byte
	want   []byte
}

func newEchoCall(tool string, textLen int) echoCall {
	return newEchoCallOf(tool, "text", "", textLen)
}

// newEchoCallOf is newEchoCall for an echo tool whose string argument is
// named arg and whose answer puts prefix before the text (server-everything's
// echo: arg "message", prefix "Echo: ").
func newEchoCallOf(tool, arg, prefix string, textLen int) echoCall {
	text := strings.Repeat("x", textLen)
	return echoCall{
		params: []byte(`{"name":"` + tool + `","arguments":{"` + arg + `":"` + text + `"}}`),
		want:   []byte(`"text":"` + prefix + text + `"`),
	}
}

// check verifies a response to the echo call without decoding it.
func (e echoCall) check(resp []byte) error {
	if !bytes.Contains(resp, e.want) || bytes.Contains(resp, []byte(`"isError":true`)) || bytes.Contains(resp, []byte(`"error":{`)) {
		return fmt.Errorf("unexpected response to the echo call: %.300s", resp)
	}
	return nil
}
