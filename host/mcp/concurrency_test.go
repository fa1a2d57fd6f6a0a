package mcp

import (
	"context"
	"errors"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// TestSlowCallBlocksNothing: while a call is parked, pings and other calls
// are answered, so responses come out of order.
func TestSlowCallBlocksNothing(t *testing.T) {
	t.Parallel()
	for _, stdio := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "stdio"}[stdio], func(t *testing.T) {
			t.Parallel()
			c := newClient(t, clientOptions{stdio: stdio})
			c.initialize("2025-11-25")
			c.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`)
			c.await("the slow call to park", func() bool { return c.cat.LiveParked() == 1 })
			c.write(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
			c.write(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"fast"}}}`)
			var ids []string
			for range 2 {
				ids = append(ids, string(decode(t, c.next()).ID))
			}
			if strings.Join(ids, ",") != "2,3" && strings.Join(ids, ",") != "3,2" {
				t.Fatalf("got responses %v while the slow call runs, want 2 and 3", ids)
			}
			if !c.cat.ReleaseOne() {
				t.Fatal("the slow call is not parked any more")
			}
			if r := decode(t, c.next()); string(r.ID) != "1" || !strings.Contains(string(r.Result), "slow done") {
				t.Errorf("last response = %+v, want the slow call's", r)
			}
		})
	}
}

// TestManyConcurrentCalls runs many calls at once and checks that each gets
// exactly its own response.
func TestManyConcurrentCalls(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{})
	c.initialize("2025-11-25")
	const n = 300
	for i := range n {
		id := strconv.Itoa(i)
		c.write(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + id + `"}}}`)
	}
	seen := map[string]bool{}
	for range n {
		r := decode(t, c.next())
		id := string(r.ID)
		if seen[id] {
			t.Fatalf("two responses for id %s", id)
		}
		seen[id] = true
		if !strings.Contains(string(r.Result), `"text":"`+id+`"`) {
			t.Errorf("id %s got result %s", id, r.Result)
		}
	}
}

// TestMaxInFlight: with one slot, a second call waits without reaching the
// catalog, can be cancelled while it waits, and runs once the slot frees.
func TestMaxInFlight(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{server: Options{MaxInFlight: 1}})
	c.initialize("2025-11-25")
	c.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`)
	c.await("the first call to park", func() bool { return c.cat.LiveParked() == 1 })
	c.write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"queued"}}}`)
	c.write(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"cancelled"}}}`)
	// Both wait for the slot: pings are still answered.
	c.write(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if r := decode(t, c.next()); string(r.ID) != `"p"` {
		t.Fatalf("got %+v, want the ping's response", r)
	}
	if got := c.cat.Running(); got != 1 {
		t.Fatalf("%d calls in the catalog, want 1", got)
	}
	c.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
	c.await("the server to read the cancellation", func() bool { return c.obs.reads.Load() > c.sent })
	c.cat.ReleaseOne()
	var ids []string
	for range 2 {
		ids = append(ids, string(decode(t, c.next()).ID))
	}
	c.settle()
	if rest := c.take(); len(rest) > 0 {
		t.Errorf("unexpected output %q", rest)
	}
	// 1 frees its slot before its answer is written, so 2 may answer
	// first: the order of the two answers is not the point.
	slices.Sort(ids)
	if strings.Join(ids, ",") != "1,2" {
		t.Errorf("responses %v, want those of 1 and 2 (3 was cancelled while waiting)", ids)
	}
	if p := c.cat.Peak(); p != 1 {
		t.Errorf("peak of %d calls in the catalog, want 1", p)
	}
}

// TestEOFCancelsCalls: when stdin ends, Serve cancels the calls still
// running, waits for them and returns nil, leaving no goroutine behind.
func TestEOFCancelsCalls(t *testing.T) {
	before := runtime.NumGoroutine()
	cat := mcptest.NewCatalog()
	pr, pw := io.Pipe()
	out := &lineWriter{add: func([]byte) {}}
	parked := make(chan struct{})
	var once sync.Once
	cat.OnChange = func() {
		if cat.LiveParked() == 2 {
			once.Do(func() { close(parked) })
		}
	}
	done := make(chan error, 1)
	srv := NewServer(cat, nil)
	go func() { done <- srv.ServeStdio(context.Background(), pr, out) }()
	for _, m := range []string{mcptest.InitMsg("2025-11-25"),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`} {
		io.WriteString(pw, m+"\n")
	}
	select {
	case <-parked:
	case <-time.After(10 * time.Second):
		t.Fatal("the calls did not start")
	}
	pw.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio = %v, want nil at EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return at EOF")
	}
	left := cat.Parked()
	if left != 0 {
		t.Errorf("%d calls still parked after Serve returned", left)
	}
	if n := cat.Subscribers(); n != 0 {
		t.Errorf("%d catalog subscriptions left", n)
	}
	waitGoroutines(t, before)
}

// waitGoroutines waits (bounded) for the goroutine count to fall back to n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond) // polling: no event announces a goroutine's end
	}
}

// TestContextEndsServe: ending Serve's context cancels the calls and
// returns the context's error, even while Read is blocked.
func TestContextEndsServe(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{})
	c.initialize("2025-11-25")
	c.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`)
	c.await("the call to park", func() bool { return c.cat.LiveParked() == 1 })
	c.cancel()
	select {
	case err := <-c.served:
		c.served <- err
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Serve = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return when its context ended")
	}
	if n := c.cat.LiveParked(); n != 0 {
		t.Errorf("%d calls still live", n)
	}
	if out := c.take(); len(out) != 0 {
		t.Errorf("a cancelled call was answered: %q", out)
	}
}

// failWriter fails every write.
type failWriter struct{}

var errBrokenPipe = errors.New("broken pipe")

func (failWriter) Write([]byte) (int, error) { return 0, errBrokenPipe }

// TestWriteErrorEndsServe: when stdout breaks, Serve returns the error.
func TestWriteErrorEndsServe(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	defer pw.Close()
	done := make(chan error, 1)
	go func() {
		done <- NewServer(mcptest.NewCatalog(), nil).ServeStdio(context.Background(), pr, failWriter{})
	}()
	go io.WriteString(pw, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	select {
	case err := <-done:
		if !errors.Is(err, errBrokenPipe) {
			t.Errorf("ServeStdio = %v, want an error wrapping %v", err, errBrokenPipe)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after a failed write")
	}
}

// TestCallsStartInline: over stdio a call starts on the read loop through
// the catalog's StartCall (no worker); over other transports, and inside a
// batch, a worker starts it and waits. Either way the answer is the same.
func TestCallsStartInline(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		stdio   bool
		version string
		msg     string
		inline  bool
	}{
		"stdio":        {true, "2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, true},
		"in memory":    {false, "2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, false},
		"stdio, batch": {true, "2025-03-26", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}]`, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, clientOptions{stdio: tt.stdio})
			c.initialize(tt.version)
			got := c.roundtrip(tt.msg)
			want := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`
			if tt.msg[0] == '[' {
				want = "[" + want + "]"
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("got %q, want %s", got, want)
			}
			if n := c.session.Load().calls.inline.Load(); (n == 1) != tt.inline {
				t.Errorf("%d calls started on the read loop, want inline=%v", n, tt.inline)
			}
		})
	}
}
