package mcp

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// recorder is a Sink that keeps what it is given.
type recorder struct {
	mu   sync.Mutex
	msgs []string
	poke chan struct{}
}

func newRecorder() *recorder { return &recorder{poke: make(chan struct{}, 1)} }

func (r *recorder) Write(msg []byte) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, string(msg))
	r.mu.Unlock()
	select {
	case r.poke <- struct{}{}:
	default:
	}
	return nil
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// methodsOf lists each message's method, or "response <id>".
func methodsOf(t *testing.T, msgs []string) []string {
	var s []string
	for _, m := range msgs {
		r := decode(t, m)
		if r.Method != "" {
			s = append(s, r.Method)
		} else {
			s = append(s, "response "+string(r.ID))
		}
	}
	return s
}

// TestSessionSinks: a request's response and its progress and logs go to
// the sink given with it; list_changed goes to the session-wide sink. This
// is the split Streamable HTTP needs (POST stream vs GET stream).
func TestSessionSinks(t *testing.T) {
	t.Parallel()
	cat := mcptest.NewCatalog()
	srv := NewServer(cat, nil)
	session := newRecorder()
	s := srv.NewSession(session)
	defer s.Close()
	ctx := context.Background()

	post1 := newRecorder()
	s.Handle(ctx, []byte(mcptest.InitMsg("2025-11-25")), post1)
	if got := methodsOf(t, post1.get()); !cmp.Equal(got, []string{`response "init"`}) {
		t.Fatalf("initialize wrote %v", got)
	}

	post2 := newRecorder()
	s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty","_meta":{"progressToken":"x"}}}`), post2)
	want := []string{
		"notifications/progress", "notifications/progress",
		"notifications/message", "notifications/message", "notifications/message",
		"response 2",
	}
	if diff := cmp.Diff(want, methodsOf(t, post2.get())); diff != "" {
		t.Errorf("the call's sink (-want +got):\n%s", diff)
	}

	cat.Change()
	select {
	case <-session.poke:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed on the session sink")
	}
	if diff := cmp.Diff([]string{"notifications/tools/list_changed"}, methodsOf(t, session.get())); diff != "" {
		t.Errorf("session sink (-want +got):\n%s", diff)
	}
	if n := len(post1.get()) + len(post2.get()); n != 1+len(want) {
		t.Errorf("list_changed leaked into a request's sink")
	}
}

// TestHandleCancelledByContext: when the context given to Handle ends (an
// HTTP client went away), the call is cancelled and Handle returns without
// a response.
func TestHandleCancelledByContext(t *testing.T) {
	t.Parallel()
	cat := mcptest.NewCatalog()
	s := NewServer(cat, nil).NewSession(newRecorder())
	defer s.Close()
	s.Handle(context.Background(), []byte(mcptest.InitMsg("2025-11-25")), newRecorder())

	ctx, cancel := context.WithCancel(context.Background())
	parked := make(chan struct{})
	cat.OnChange = func() { close(parked) }
	out := newRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`), out)
	}()
	<-parked
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Handle did not return when its context ended")
	}
	if got := out.get(); len(got) != 0 {
		t.Errorf("a cancelled call was answered: %q", got)
	}
}

// TestCloseCancelsHandle: Close cancels the calls in flight and waits for
// them; Close twice is fine; a session closed refuses new calls silently.
func TestCloseCancelsHandle(t *testing.T) {
	t.Parallel()
	cat := mcptest.NewCatalog()
	s := NewServer(cat, nil).NewSession(newRecorder())
	s.Handle(context.Background(), []byte(mcptest.InitMsg("2025-11-25")), newRecorder())
	parked := make(chan struct{})
	cat.OnChange = func() { close(parked) }
	out := newRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`), out)
	}()
	<-parked
	s.Close()
	<-done // Close waited for the call, so Handle has returned
	s.Close()
	s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`), out)
	if got := out.get(); len(got) != 0 {
		t.Errorf("output after Close: %q", got)
	}
	if n := cat.Subscribers(); n != 0 {
		t.Errorf("%d subscriptions after Close", n)
	}
}

// TestListChangedCoalesces: a burst of changes while a notification is due
// sends fewer notifications, never more, and at least one.
func TestListChangedCoalesces(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{})
	c.initialize("2025-11-25")
	for range 100 {
		c.cat.Change()
	}
	c.settle()
	out := c.take()
	if len(out) == 0 || len(out) > 100 {
		t.Fatalf("%d notifications for 100 changes", len(out))
	}
	for _, o := range out {
		if !strings.Contains(o, "notifications/tools/list_changed") {
			t.Errorf("unexpected %s", o)
		}
	}
}
