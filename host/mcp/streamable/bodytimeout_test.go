package streamable

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// trickle POSTs to path a body that declares 1000 bytes and sends one
// every interval, as long as the server reads; it returns the response
// and whether the server then closed the connection (within 10 s: the
// bound of the test, not what it measures).
func trickle(t *testing.T, hs *httpServer, path string, interval time.Duration) (status int, body string, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(hs.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "POST " + path + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(hs.url, "http://") + "\r\n" +
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: ping\r\nContent-Length: 1000\r\n\r\n"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("POST %s trickling: no response: %v", path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	// Closed: EOF, or a reset when the server closes with bytes of ours
	// unread.
	return resp.StatusCode, string(b), err == io.EOF || errors.Is(err, syscall.ECONNRESET)
}

// TestBodyTrickleCut: a body that trickles (a byte every 200 ms, so the
// connection is never quiet for long) is cut at BodyTimeout with 408, and
// the connection is closed, at /mcp and at the legacy /message (issue
// 31, attack 6: a byte every 2 s kept a connection open past 180 s where
// the documentation says a body must arrive within 30 s).
func TestBodyTrickleCut(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{BodyTimeout: time.Second})
	legacy := hs.do(req{"GET", PathSSE, map[string]string{"Accept": "text/event-stream"}, ""})
	t.Cleanup(func() { legacy.Body.Close() })
	endpoint := newSSEReader(t, legacy).nextWithin(t, 10*time.Second).data // /message?sessionId=...
	for _, path := range []string{PathMCP, endpoint} {
		status, body, closed := trickle(t, hs, path, 200*time.Millisecond)
		if status != http.StatusRequestTimeout || !strings.Contains(body, "the body did not arrive within 1s") {
			t.Errorf("POST %s trickling: %d %s, want 408 naming the deadline", path, status, body)
		}
		if !closed {
			t.Errorf("POST %s trickling: the connection was still open after the 408", path)
		}
	}
}

// TestBodyTimeoutSparesStreams: the body's read deadline ends with the
// body: a listen stream POSTed with it still carries a notification long
// after BodyTimeout.
func TestBodyTimeoutSparesStreams(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{BodyTimeout: 200 * time.Millisecond})
	body := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta(`{}`) + `}}`
	resp := hs.do(statelessPost("subscriptions/listen", "", body))
	defer resp.Body.Close()
	sr := newSSEReader(t, resp)
	sr.nextWithin(t, 10*time.Second) // acknowledged
	time.Sleep(time.Second)          // what is tested: the stream outlives the body's deadline
	hs.cat.Change()
	if e := sr.nextWithin(t, 10*time.Second); !strings.Contains(e.data, "notifications/tools/list_changed") {
		t.Fatalf("after BodyTimeout: %s, want tools/list_changed", e.data)
	}
}
