package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestMain fails the run if any goroutine of this package outlives the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := waitNoGoroutines("plughost/host/mcp.", 5*time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines leaked:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// waitNoGoroutines waits up to d for every goroutine whose stack mentions
// pkg (other than test functions) to end; it returns the stacks of those
// that did not.
func waitNoGoroutines(pkg string, d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, pkg) && !strings.Contains(g, "testing.tRunner") &&
				!strings.Contains(g, "waitNoGoroutines") && !strings.Contains(g, "testing.(*B)") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(10 * time.Millisecond) // polling a condition no event announces
	}
}

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
}

// client drives one server session like an MCP client would, checking
// every message the server writes against the official JSON schema of the
// negotiated version.
type client struct {
	t      testing.TB
	cat    *fakeCatalog
	obs    *observed
	send   func([]byte) // delivers one message; returns once the server read it
	closer func()       // ends the input (EOF)
	served chan error
	cancel context.CancelFunc
	events chan struct{}

	session atomic.Pointer[Session]
	sent    int64

	mu      sync.Mutex
	out     [][]byte // every line the server wrote
	seen    int      // lines already returned by take
	methods map[string]string
	version string
}

func newClient(t testing.TB, o clientOptions) *client {
	t.Helper()
	c := &client{
		t:       t,
		cat:     newFakeCatalog(),
		served:  make(chan error, 1),
		events:  make(chan struct{}, 1),
		methods: map[string]string{},
	}
	c.cat.onChange = c.poke
	add := func(line []byte) {
		c.mu.Lock()
		c.out = append(c.out, line)
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
		tr = newStdio(pr, &lineWriter{add: add}, limit)
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
	srv := NewServer(c.cat, &o.server)
	srv.onSession = func(s *Session) {
		s.idleHook = c.poke
		c.session.Store(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() { c.served <- srv.Serve(ctx, c.obs) }()
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
	if json.Unmarshal(msg, &one) == nil && len(one.ID) > 0 && validID(one.ID) && one.Method != "" {
		c.mu.Lock()
		c.methods[idKey(one.ID)] = one.Method
		c.mu.Unlock()
	}
}

// await waits until cond holds, re-checking it on every event.
func (c *client) await(what string, cond func() bool) {
	c.t.Helper()
	timeout := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-c.events:
		case <-timeout:
			c.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// settle waits until the server has dispatched every message sent and all
// its work has written its output, except calls parked in the slow tool.
func (c *client) settle() {
	c.t.Helper()
	c.await("the server to settle", func() bool {
		s := c.session.Load()
		return c.obs.reads.Load() > c.sent && s != nil && s.pending.Load() == c.cat.liveParked()
	})
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
	c.mu.Lock()
	methods := c.methods
	c.mu.Unlock()
	if err := schemas(c.t).check(version, line, func(id json.RawMessage) string {
		c.mu.Lock()
		defer c.mu.Unlock()
		return methods[idKey(id)]
	}); err != nil {
		c.t.Errorf("server wrote a message the schema rejects: %s\n%v", line, err)
	}
}

// validator checks messages against the official MCP schemas.
type validator map[string]map[string]*jsonschema.Schema // version → definition → schema

var (
	schemaOnce sync.Once
	schemaSet  validator
	schemaErr  error
)

func schemas(t testing.TB) validator {
	t.Helper()
	schemaOnce.Do(func() { schemaSet, schemaErr = loadSchemas() })
	if schemaErr != nil {
		t.Fatal(schemaErr)
	}
	return schemaSet
}

var checkedDefs = []string{
	"JSONRPCNotification", "InitializeResult", "ListToolsResult", "CallToolResult", "EmptyResult",
	"ProgressNotification", "LoggingMessageNotification", "ToolListChangedNotification",
}

func loadSchemas() (validator, error) {
	v := validator{}
	for _, version := range versions {
		f, err := os.Open(filepath.Join("testdata", "schema", version+".json"))
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", version, err)
		}
		url := "file:///schema/" + version + ".json"
		comp := jsonschema.NewCompiler()
		if err := comp.AddResource(url, doc); err != nil {
			return nil, err
		}
		// The 2025-11-25 schema is draft 2020-12 ($defs) and renames the
		// response definitions; the older ones are draft 7 (definitions).
		prefix, result, rpcErr := "#/definitions/", "JSONRPCResponse", "JSONRPCError"
		if version == "2025-11-25" {
			prefix, result, rpcErr = "#/$defs/", "JSONRPCResultResponse", "JSONRPCErrorResponse"
		}
		v[version] = map[string]*jsonschema.Schema{}
		for name, def := range map[string]string{"response": result, "error": rpcErr} {
			if v[version][name], err = comp.Compile(url + prefix + def); err != nil {
				return nil, err
			}
		}
		for _, def := range checkedDefs {
			if v[version][def], err = comp.Compile(url + prefix + def); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// resultDefs names the result definition of each method's response.
var resultDefs = map[string]string{
	"initialize":       "InitializeResult",
	"tools/list":       "ListToolsResult",
	"tools/call":       "CallToolResult",
	"ping":             "EmptyResult",
	"logging/setLevel": "EmptyResult",
}

var notificationDefs = map[string]string{
	"notifications/progress":           "ProgressNotification",
	"notifications/message":            "LoggingMessageNotification",
	"notifications/tools/list_changed": "ToolListChangedNotification",
}

// check validates msg (a message or batch) for version, or for every
// version when version is "" (before negotiation). method returns the
// method of the request a response answers.
func (v validator) check(version string, msg []byte, method func(json.RawMessage) string) error {
	if bytes.HasPrefix(msg, []byte("[")) {
		if version != "2025-03-26" {
			return fmt.Errorf("a batch response in protocol version %q", version)
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(msg, &elems); err != nil || len(elems) == 0 {
			return fmt.Errorf("bad batch response: %v", err)
		}
		for _, e := range elems {
			if err := v.check(version, e, method); err != nil {
				return err
			}
		}
		return nil
	}
	check := versions[:]
	if version != "" {
		check = []string{version}
	}
	for _, ver := range check {
		if err := v.checkOne(ver, msg, method); err != nil {
			return fmt.Errorf("%s: %w", ver, err)
		}
	}
	return nil
}

func (v validator) checkOne(version string, msg []byte, method func(json.RawMessage) string) error {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(msg, &env); err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(msg))
	if err != nil {
		return err
	}
	defs := v[version]
	switch {
	case env.Method != nil:
		def, ok := notificationDefs[*env.Method]
		if !ok {
			return fmt.Errorf("unexpected notification %q", *env.Method)
		}
		if err := defs["JSONRPCNotification"].Validate(inst); err != nil {
			return err
		}
		return defs[def].Validate(inst)
	case env.Error != nil:
		if string(env.ID) == "null" {
			// JSON-RPC 2.0 demands id null when the request's id could not
			// be read, but every MCP schema's RequestId excludes null (and
			// only 2025-11-25 makes the id optional). Check such an error
			// without its id against the 2025-11-25 definition.
			m := inst.(map[string]any)
			delete(m, "id")
			return v["2025-11-25"]["error"].Validate(m)
		}
		return defs["error"].Validate(inst)
	case env.Result != nil:
		if err := defs["response"].Validate(inst); err != nil {
			return err
		}
		def, ok := resultDefs[method(env.ID)]
		if !ok {
			return fmt.Errorf("a result for id %s, which no known request has", env.ID)
		}
		res, err := jsonschema.UnmarshalJSON(bytes.NewReader(env.Result))
		if err != nil {
			return err
		}
		return defs[def].Validate(res)
	}
	return fmt.Errorf("neither a notification, a result nor an error")
}
