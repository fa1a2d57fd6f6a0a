package console

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestEventStream: a signed-in page's stream gets each change the Source
// reports as one "plugin" event whose JSON data holds a hostile name on
// one line; the streams are bounded (one more is answered 503 naming the
// bound); Close ends the open stream and the Source's watch, and refuses
// new streams. Cost: one loopback server, no waiting on time.
func TestEventStream(t *testing.T) {
	src := &fakeSource{}
	h := newTestHandler(t, src, func(o *Options) { o.MaxStreams = 1 })
	srv := httptest.NewServer(h)
	defer srv.Close()
	cookie := signIn(t, bob())
	open := func() *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/events", nil)
		req.AddCookie(cookie)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if src.watches != 0 {
		t.Fatalf("the console watches the Source before any page asks: %d", src.watches)
	}

	resp := open()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewReader(resp.Body)
	readEvent := func() string { // up to the blank line that ends an event
		t.Helper()
		var ev []string
		for {
			line, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("after %q: %v", ev, err)
			}
			if line == "\n" {
				return strings.Join(ev, "")
			}
			ev = append(ev, line)
		}
	}
	if first := readEvent(); !strings.HasPrefix(first, ":") {
		t.Fatalf("first %q, want a comment", first)
	}

	// The stream is subscribed once its first comment is in: events now reach it.
	src.mu.Lock()
	changed := src.changed
	src.mu.Unlock()
	changed(Event{Plugin: "evil\n\ndata: {\"plugin\":\"forged\"}\n\n<script>", Kind: "started"})
	want := "event: plugin\ndata: {\"plugin\":\"evil\\n\\ndata: {\\\"plugin\\\":\\\"forged\\\"}\\n\\n\\u003cscript\\u003e\",\"kind\":\"started\"}\n"
	if got := readEvent(); got != want {
		t.Errorf("event\n%q, want\n%q", got, want)
	}

	second := open()
	if second.StatusCode != http.StatusServiceUnavailable {
		second.Body.Close()
		t.Fatalf("a stream past the bound: %d", second.StatusCode)
	}
	body, _ := io.ReadAll(second.Body)
	second.Body.Close()
	if !strings.Contains(string(body), "at most 1") {
		t.Errorf("a stream past the bound says %q", body)
	}

	h.Close()
	if _, err := io.ReadAll(lines); err != nil {
		t.Errorf("the stream did not end cleanly at Close: %v", err)
	}
	if src.watches != 1 || src.stopped != 1 {
		t.Errorf("Source watched %d times and stopped %d, want 1 and 1", src.watches, src.stopped)
	}
	if after := open(); after.Body.Close() != nil || after.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a stream after Close: %d", after.StatusCode)
	}
}

// TestEventHubDropsASlowStream: a stream whose buffer is full is dropped
// (closed after what it holds) rather than waited for, the others get the
// event, and the dropped stream's place is free again; the watch starts
// with the first stream only.
func TestEventHubDropsASlowStream(t *testing.T) {
	src := &fakeSource{}
	hub := newEventHub(src, 2, hclog.NewNullLogger())
	defer hub.close()
	slow, err := hub.subscribe()
	if err != nil {
		t.Fatal(err)
	}
	quick, err := hub.subscribe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hub.subscribe(); !errors.Is(err, errTooManyStreams) {
		t.Fatalf("a third stream of two: %v", err)
	}
	if src.watches != 1 {
		t.Fatalf("%d watches for two streams, want 1", src.watches)
	}
	for range streamBuffer {
		hub.publish(Event{Plugin: "p", Kind: "started"})
	}
	for range streamBuffer {
		<-quick
	}
	hub.publish(Event{Plugin: "last", Kind: "crashed"})
	if ev := <-quick; ev.Plugin != "last" {
		t.Errorf("the quick stream got %v", ev)
	}
	n := 0
	for range slow {
		n++
	}
	if n != streamBuffer {
		t.Errorf("the slow stream held %d events before it was closed, want %d", n, streamBuffer)
	}
	if _, err := hub.subscribe(); err != nil {
		t.Errorf("the dropped stream's place is not free: %v", err)
	}
}

// TestEventStreamEndsWithTheSession: once the user's session is gone
// (logged out, expired), the stream ends without passing on the next
// change.
func TestEventStreamEndsWithTheSession(t *testing.T) {
	src := &fakeSource{}
	h := newTestHandler(t, src)
	srv := httptest.NewServer(h)
	defer srv.Close()
	cookie := signIn(t, bob())
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/events", nil)
	req.AddCookie(cookie)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	if first, err := lines.ReadString('\n'); err != nil || !strings.HasPrefix(first, ":") {
		t.Fatalf("first line %q: %v", first, err)
	}
	if end, err := lines.ReadString('\n'); end != "\n" {
		t.Fatalf("the comment is not ended by a blank line: %q, %v", end, err)
	}
	testUsers.Delete(cookie.Value) // as logout ends the session
	src.mu.Lock()
	changed := src.changed
	src.mu.Unlock()
	changed(Event{Plugin: "notes", Kind: "started"})
	if line, err := lines.ReadString('\n'); err != io.EOF {
		t.Errorf("after the session ended the stream went on: %q, %v", line, err)
	}
}
