package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plughost/plughost/internal/jsonrpc"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"

	"github.com/plughost/plughost/host/mcp/stdio"
)

// TestMain fails the run if any goroutine of this package outlives the tests.
func TestMain(m *testing.M) { os.Exit(mcptest.RunCheckingLeaks(m, "plughost/host/mcp.")) }

// chanTransport is the in-memory Transport: the client's messages arrive on
// in, the server's go to sink.
type chanTransport struct {
	in    chan []byte
	limit int // 0: none
	sink  func([]byte)
}

func (t *chanTransport) Read() ([]byte, error) {
	b, ok := <-t.in
	if !ok {
		return nil, io.EOF
	}
	if t.limit > 0 && len(b) > t.limit {
		return nil, fmt.Errorf("%w: over %d bytes", ErrMessageTooLarge, t.limit)
	}
	return b, nil
}

func (t *chanTransport) Write(msg []byte) error {
	t.sink(bytes.Clone(msg))
	return nil
}

// observed counts the server's Read calls: when the count passes n+1, the
// server has dispatched the n-th message.
type observed struct {
	Transport
	reads atomic.Int64
	poke  func()
}

func (o *observed) Read() ([]byte, error) {
	o.reads.Add(1)
	o.poke()
	return o.Transport.Read()
}

// lineWriter is stdio's output in tests: it splits the byte stream into
// lines and hands each to add, synchronously.
type lineWriter struct {
	mu      sync.Mutex
	partial []byte
	add     func([]byte)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.add(bytes.Clone(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
}

// clientOptions choose how a test client reaches the server.
type clientOptions struct {
	server Options
	stdio  bool // through the real stdio transport instead of chanTransport
	// catalog, when not nil, is served instead of the client's
	// mcptest.Catalog (e.g. a real host/catalog with hooks).
	catalog Catalog
}

// client drives one server session like an MCP client would, checking
// every message the server writes against the official JSON schema of the
// negotiated version.
type client struct {
	t      testing.TB
	srv    *Server
	cat    *mcptest.Catalog
	obs    *observed
	send   func([]byte) // delivers one message; returns once the server read it
	closer func()       // ends the input (EOF)
	served chan error
	cancel context.CancelFunc
	events chan struct{}

	session atomic.Pointer[Session]
	sent    int64

	mu        sync.Mutex
	out       [][]byte // every line the server wrote
	seen      int      // lines already returned by take
	methods   map[string]string
	stateless map[string]bool // ids of the stateless requests sent
	flushed   func() bool     // stdio: everything written has reached the client; nil otherwise
	asked     map[string]bool // the ids (jsonrpc.IDKey) of the server's requests received
	version   string
}

func newClient(t testing.TB, o clientOptions) *client {
	t.Helper()
	c := &client{
		t:         t,
		cat:       mcptest.NewCatalog(),
		served:    make(chan error, 1),
		events:    make(chan struct{}, 1),
		methods:   map[string]string{},
		stateless: map[string]bool{},
		asked:     map[string]bool{},
	}
	c.cat.OnChange = c.poke
	add := func(line []byte) {
		c.mu.Lock()
		c.out = append(c.out, line)
		if m, err := jsonrpc.Decode(line); err == nil && m.Kind == jsonrpc.Request {
			c.asked[jsonrpc.IDKey(m.ID)] = true
		}
		c.mu.Unlock()
		c.poke()
	}
	var tr Transport
	if o.stdio {
		pr, pw := io.Pipe()
		limit := o.server.MaxMessageSize
		if limit <= 0 {
			limit = DefaultMaxMessageSize
		}
		st := stdio.New(pr, &lineWriter{add: add}, limit)
		c.flushed = st.Flushed
		tr = st
		c.send = func(b []byte) {
			if _, err := pw.Write(append(bytes.Clone(b), '\n')); err != nil {
				t.Errorf("writing to the server: %v", err)
			}
		}
		c.closer = func() { pw.Close() }
	} else {
		in := make(chan []byte)
		tr = &chanTransport{in: in, limit: o.server.MaxMessageSize, sink: add}
		c.send = func(b []byte) { in <- bytes.Clone(b) }
		c.closer = func() { close(in) }
	}
	c.obs = &observed{Transport: tr, poke: c.poke}
	opts := o.server
	opts.OnSession = func(s *Session) func() {
		c.session.Store(s)
		return c.poke
	}
	var served Catalog = c.cat
	if o.catalog != nil {
		served = o.catalog
	}
	srv := NewServer(served, &opts)
	c.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() { c.served <- srv.serve(ctx, c.obs, nil, o.stdio) }() // stdio starts calls inline, as ServeStdio
	t.Cleanup(func() {
		c.cancel()
		c.close()
	})
	return c
}

func (c *client) poke() {
	select {
	case c.events <- struct{}{}:
	default:
	}
}

// write sends one raw message without waiting for its effects.
func (c *client) write(msg string) {
	c.t.Helper()
	c.record([]byte(msg))
	c.send([]byte(msg))
	c.sent++
}

// record remembers the method of each request, to check its result.
func (c *client) record(msg []byte) {
	var one struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	var many []json.RawMessage
	if json.Unmarshal(msg, &many) == nil {
		for _, m := range many {
			c.record(m)
		}
		return
	}
	if json.Unmarshal(msg, &one) == nil && len(one.ID) > 0 && jsonrpc.ValidID(one.ID) && one.Method != "" {
		var p struct {
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		json.Unmarshal(msg, &p)
		c.mu.Lock()
		c.methods[jsonrpc.IDKey(one.ID)] = one.Method
		if p.Params.Meta["io.modelcontextprotocol/protocolVersion"] != nil {
			c.stateless[jsonrpc.IDKey(one.ID)] = true
		}
		c.mu.Unlock()
	}
}

// await waits until cond holds, re-checking it on every event, at most
// 30 s: a hang guard, wide enough for -race on a loaded 2-core machine.
func (c *client) await(what string, cond func() bool) {
	c.t.Helper()
	timeout := time.After(30 * time.Second)
	for !cond() {
		select {
		case <-c.events:
		case <-timeout:
			c.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// settle waits until the server has dispatched every message sent and all
// its work has written its output, except calls parked in the slow tool
// and calls waiting for the client to answer a request.
func (c *client) settle() {
	c.t.Helper()
	c.await("the server to settle", func() bool {
		s := c.session.Load()
		if !(c.obs.reads.Load() > c.sent && s != nil && !cancelling(s) && s.Pending() == c.cat.LiveParked()+c.awaited(s)) {
			return false
		}
		// A response's Write may have returned into a batch that a write
		// in progress is about to write: it ends soon, with no event.
		for c.flushed != nil && !c.flushed() {
			runtime.Gosched()
		}
		return true
	})
}

// cancelling reports whether a call of s that the client cancelled has not
// finished yet: it may still write (notifications/cancelled for its
// request to the client).
func cancelling(s *Session) bool {
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	for _, c := range s.calls.inflight {
		if c.cancelled {
			return true
		}
	}
	return false
}

// awaited counts the server's requests that the client has received and
// whose answer s still awaits (neither answered nor abandoned): a call
// waiting for one writes nothing until the client acts. s forgets a
// request it abandons before it writes notifications/cancelled and answers
// the call. (A request abandoned at the input timeout counts until then:
// tests of the timeout await the lines instead of settling.)
func (c *client) awaited(s *Session) int64 {
	s.client.mu.Lock()
	keys := slices.Collect(maps.Keys(s.client.pending))
	s.client.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, k := range keys {
		if c.asked[k] {
			n++
		}
	}
	return n
}

// take returns (and schema-checks) the lines written since the last take.
func (c *client) take() []string {
	c.t.Helper()
	c.mu.Lock()
	lines := c.out[c.seen:]
	c.seen = len(c.out)
	c.mu.Unlock()
	var s []string
	for _, l := range lines {
		c.check(l)
		s = append(s, string(l))
	}
	return s
}

// next waits for the next line from the server and returns it.
func (c *client) next() string {
	c.t.Helper()
	c.await("a message from the server", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.out) > c.seen
	})
	c.mu.Lock()
	line := c.out[c.seen]
	c.seen++
	c.mu.Unlock()
	c.check(line)
	return string(line)
}

// roundtrip sends msg, settles and returns the server's output.
func (c *client) roundtrip(msg string) []string {
	c.t.Helper()
	c.write(msg)
	c.settle()
	return c.take()
}

// initialize performs the handshake for version.
func (c *client) initialize(version string) {
	c.t.Helper()
	out := c.roundtrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	if len(out) != 1 || !strings.Contains(out[0], `"protocolVersion":"`+version+`"`) {
		c.t.Fatalf("initialize %s: got %q", version, out)
	}
	c.roundtrip(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// close ends the input and waits for Serve; it returns Serve's error.
func (c *client) close() error {
	c.t.Helper()
	if c.closer != nil {
		c.closer()
		c.closer = nil
	}
	select {
	case err := <-c.served:
		c.served <- err
		return err
	case <-time.After(10 * time.Second):
		c.t.Fatal("Serve did not return")
		return nil
	}
}

// check validates one line the server wrote.
func (c *client) check(line []byte) {
	c.t.Helper()
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	if version == "" {
		var r struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(line, &r) == nil && r.Result.ProtocolVersion != "" {
			version = r.Result.ProtocolVersion
			c.mu.Lock()
			c.version = version
			c.mu.Unlock()
		}
	}
	// A stateless request's answer, and what a subscriptions/listen stream
	// carries, are checked against the stateless revision's schema.
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &msg) == nil {
		c.mu.Lock()
		if (len(msg.ID) > 0 && c.stateless[jsonrpc.IDKey(msg.ID)]) || msg.Params.Meta["io.modelcontextprotocol/subscriptionId"] != nil {
			version = mcptest.Stateless
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	methods := c.methods
	c.mu.Unlock()
	if err := mcptest.CheckSchema(c.t, version, line, func(id json.RawMessage) string {
		c.mu.Lock()
		defer c.mu.Unlock()
		return methods[jsonrpc.IDKey(id)]
	}); err != nil {
		c.t.Errorf("server wrote a message the schema rejects: %s\n%v", line, err)
	}
}
