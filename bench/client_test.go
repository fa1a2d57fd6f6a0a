package main

import (
	"context"
	"io"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/bench/internal/floor"
)

// The load client against the floor server, in-process: over pipes as over
// a child's stdin/stdout, and over HTTP.
func TestLoadClientAgainstFloor(t *testing.T) {
	t.Parallel()
	for name, dial := range map[string]func(t *testing.T) conn{
		"stdio": func(t *testing.T) conn {
			cr, sw := io.Pipe() // server → client
			sr, cw := io.Pipe() // client → server
			done := make(chan error, 1)
			go func() {
				err := floor.Serve(sr, sw)
				sw.Close()
				done <- err
			}()
			t.Cleanup(func() {
				cw.Close()
				if err := <-done; err != nil {
					t.Errorf("floor.Serve: %v", err)
				}
			})
			return newStdioConn(cr, cw)
		},
		"http": func(t *testing.T) conn {
			srv := httptest.NewServer(floor.Handler())
			t.Cleanup(srv.Close)
			c := newHTTPConn(srv.URL + "/mcp")
			t.Cleanup(func() { c.close() })
			return c
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := dial(t)
			ctx := context.Background()
			if _, err := initialize(ctx, c); err != nil {
				t.Fatal(err)
			}
			names, pages, err := listToolsPages(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"echo"}, names); diff != "" || pages != 1 {
				t.Errorf("tools (-want +got):\n%s; pages = %d", diff, pages)
			}
			if p, err := listAllFast(ctx, c); err != nil || p != 1 {
				t.Errorf("listAllFast = %d, %v; want 1 page", p, err)
			}
			echo := newEchoCall("echo", 64)
			var wg sync.WaitGroup
			for range 16 { // calls in flight, answered by id
				wg.Go(func() {
					for range 50 {
						resp, err := c.call(ctx, "tools/call", echo.params)
						if err != nil {
							t.Error(err)
							return
						}
						if err := echo.check(resp); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			// check refuses a wrong answer: an unknown tool is a JSON-RPC error.
			resp, err := c.call(ctx, "tools/call", newEchoCall("nope", 64).params)
			if err != nil {
				t.Fatal(err)
			}
			if err := echo.check(resp); err == nil {
				t.Errorf("check accepted %s", resp)
			}
		})
	}
}

func TestScanID(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		line string
		id   int64
		ok   bool
	}{
		"response":       {`{"jsonrpc":"2.0","id":42,"result":{}}`, 42, true},
		"space":          {`{"id": 7,"result":{}}`, 7, true},
		"notification":   {`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, 0, false},
		"server request": {`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0, false},
		"string id":      {`{"jsonrpc":"2.0","id":"a","result":{}}`, 0, false},
		"no id":          {`{"jsonrpc":"2.0","result":{}}`, 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			id, ok := scanID([]byte(tc.line))
			if id != tc.id || ok != tc.ok {
				t.Errorf("scanID(%s) = %d, %v; want %d, %v", tc.line, id, ok, tc.id, tc.ok)
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	l := latencies{5, 1, 4, 2, 3}
	if got := [3]int64{int64(l.quantile(0)), int64(l.quantile(0.5)), int64(l.quantile(1))}; got != [3]int64{1, 3, 5} {
		t.Errorf("quantiles 0, .5, 1 = %v; want [1 3 5]", got)
	}
}

// The echo call of a server whose tool takes "message" and answers
// "Echo: …" (server-everything, the wrapped section).
func TestEchoCallOf(t *testing.T) {
	t.Parallel()
	e := serverSpec{EchoArg: "message", EchoPrefix: "Echo: "}.echoCall(3)
	if want := `{"name":"echo","arguments":{"message":"xxx"}}`; string(e.params) != want {
		t.Errorf("params = %s, want %s", e.params, want)
	}
	if err := e.check([]byte(`{"result":{"content":[{"type":"text","text":"Echo: xxx"}]},"jsonrpc":"2.0","id":3}`)); err != nil {
		t.Error(err)
	}
	if err := e.check([]byte(`{"result":{"content":[{"type":"text","text":"xxx"}]},"jsonrpc":"2.0","id":3}`)); err == nil {
		t.Error("an answer without the prefix passed")
	}
	if d := (serverSpec{}).echoCall(2); string(d.params) != `{"name":"echo","arguments":{"text":"xx"}}` || string(d.want) != `"text":"xx"` {
		t.Errorf("default echo call = %s, %s", d.params, d.want)
	}
}
