package mcp

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// lines is a Sink that keeps what it is written and lets a test await it.
type lines struct {
	mu      sync.Mutex
	msgs    []string
	changed chan struct{}
}

func newLines() *lines { return &lines{changed: make(chan struct{}, 1)} }

func (l *lines) Write(msg []byte) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, string(bytes.Clone(msg)))
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
	return nil
}

// next waits for the n-th message (from 0).
func (l *lines) next(t *testing.T, n int) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		if len(l.msgs) > n {
			m := l.msgs[n]
			l.mu.Unlock()
			return m
		}
		l.mu.Unlock()
		select {
		case <-l.changed:
		case <-timeout:
			t.Fatalf("no message %d", n)
		}
	}
}

// TestResourceUpdatedOnlyToSubscribers: of two sessions of one server,
// each gets resources/updated for the URIs it subscribed to only.
func TestResourceUpdatedOnlyToSubscribers(t *testing.T) {
	t.Parallel()
	cat := mcptest.NewCatalog()
	srv := NewServer(cat, nil)
	sinks := [2]*lines{newLines(), newLines()}
	var sessions [2]*Session
	for i, uri := range []string{"file:///a.txt", "file:///b.txt"} {
		s := srv.NewSession(sinks[i])
		defer s.Close()
		sessions[i] = s
		out := newLines()
		s.Handle(context.Background(), []byte(mcptest.InitMsg("2025-11-25")), out)
		s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), out)
		s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"`+uri+`"}}`), out)
		if got := out.next(t, 1); got != `{"jsonrpc":"2.0","id":1,"result":{}}` {
			t.Fatalf("session %d: subscribe answered %s", i, got)
		}
	}
	// Each session's notifications are written in order: had a.txt's
	// update gone to session 1, it would come before b.txt's.
	cat.Update("file:///a.txt")
	cat.Update("file:///b.txt")
	for i, uri := range []string{"file:///a.txt", "file:///b.txt"} {
		want := `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"` + uri + `"}}`
		if got := sinks[i].next(t, 0); got != want {
			t.Errorf("session %d got %s, want %s", i, got, want)
		}
	}
	sessions[0].Close()
	if n := cat.Subscriptions(); n != 1 {
		t.Errorf("%d live subscriptions after one session ended, want 1", n)
	}
	sessions[1].Close()
	if n := cat.Subscriptions(); n != 0 {
		t.Errorf("%d live subscriptions after both sessions ended", n)
	}
}

// TestSubscribeCancelledWaitingForSlot: a resources/subscribe cancelled
// while it waits for a slot leaves no subscription behind, at the catalog
// or in the session (the same URI can be subscribed afterwards); a second
// subscribe of a URI whose first is pending gets the first's answer.
func TestSubscribeCancelledWaitingForSlot(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{server: Options{MaxInFlight: 1}})
	c.initialize("2025-11-25")
	c.write(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	c.settle() // parked, holding the one slot
	c.write(`{"jsonrpc":"2.0","id":"s1","method":"resources/subscribe","params":{"uri":"file:///a.txt"}}`)
	c.write(`{"jsonrpc":"2.0","id":"s2","method":"resources/subscribe","params":{"uri":"file:///b.txt"}}`)
	c.write(`{"jsonrpc":"2.0","id":"s3","method":"resources/subscribe","params":{"uri":"file:///b.txt"}}`)
	c.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s1"}}`)
	// s1 ends; slow, s2 and s3 are still pending (s2 and s3 wait for the slot).
	c.await("s1 to end", func() bool { return c.obs.reads.Load() > c.sent && c.session.Load().Pending() == 3 })
	if out := c.take(); len(out) != 0 {
		t.Errorf("a cancelled subscribe wrote %q", out)
	}
	c.await("a call to park", c.cat.ReleaseOne)
	c.settle()
	got := strings.Join(c.take(), "\n")
	for _, want := range []string{`"id":"slow","result"`, `{"jsonrpc":"2.0","id":"s2","result":{}}`, `{"jsonrpc":"2.0","id":"s3","result":{}}`} {
		if !strings.Contains(got, want) {
			t.Errorf("output %s\nlacks %s", got, want)
		}
	}
	if strings.Contains(got, `"s1"`) {
		t.Errorf("the cancelled subscribe was answered: %s", got)
	}
	if n := c.cat.Subscriptions(); n != 1 {
		t.Errorf("%d live subscriptions, want 1 (b.txt, once)", n)
	}
	if r := c.one(`{"jsonrpc":"2.0","id":"s4","method":"resources/subscribe","params":{"uri":"file:///a.txt"}}`); r.Error != nil {
		t.Errorf("subscribing again after the cancel: %+v", r.Error)
	}
	if n := c.cat.Subscriptions(); n != 2 {
		t.Errorf("%d live subscriptions, want 2", n)
	}
}

// TestSubscribeAgainAfterFirstCancelled: a repeated resources/subscribe
// waiting for the first one of its URI does not inherit the first's
// cancellation: it goes on as the first, and subscribes. A
// resources/unsubscribe that arrives after it still undoes it, whether it
// arrives before or after the first's cancellation: the repeated one is
// answered success and nothing stays subscribed.
func TestSubscribeAgainAfterFirstCancelled(t *testing.T) {
	t.Parallel()
	const unsubscribe = `{"jsonrpc":"2.0","id":"u","method":"resources/unsubscribe","params":{"uri":"file:///a.txt"}}`
	tests := map[string]struct {
		before, after bool // unsubscribe before or after the cancellation
		live          int
	}{
		"subscribes":                     {live: 1},
		"unsubscribed before the cancel": {before: true},
		"unsubscribed after the cancel":  {after: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, clientOptions{server: Options{MaxInFlight: 1}})
			c.initialize("2025-11-25")
			c.write(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slow","arguments":{}}}`)
			c.settle()                                                                                             // parked, holding the one slot
			c.write(`{"jsonrpc":"2.0","id":"s1","method":"resources/subscribe","params":{"uri":"file:///a.txt"}}`) // waits for the slot
			c.write(`{"jsonrpc":"2.0","id":"s2","method":"resources/subscribe","params":{"uri":"file:///a.txt"}}`) // waits for s1
			if tt.before {
				c.write(unsubscribe) // waits for the slot
			}
			c.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s1"}}`)
			if tt.after {
				c.write(unsubscribe)
			}
			if !tt.before && !tt.after {
				// s1 ends; s2 takes its place, waiting for the slot.
				c.await("s1 to end", func() bool { return c.obs.reads.Load() > c.sent && c.session.Load().Pending() == 2 })
				if out := c.take(); len(out) != 0 {
					t.Errorf("answered before the slot freed: %q", out)
				}
			}
			c.await("a call to park", c.cat.ReleaseOne)
			c.settle()
			got := strings.Join(c.take(), "\n")
			want := []string{`"id":"slow","result"`, `{"jsonrpc":"2.0","id":"s2","result":{}}`}
			if tt.before || tt.after {
				want = append(want, `{"jsonrpc":"2.0","id":"u","result":{}}`)
			}
			for _, w := range want {
				if !strings.Contains(got, w) {
					t.Errorf("output %s\nlacks %s", got, w)
				}
			}
			if strings.Contains(got, `"s1"`) {
				t.Errorf("the cancelled subscribe was answered: %s", got)
			}
			if n := c.cat.Subscriptions(); n != tt.live {
				t.Errorf("%d live subscriptions, want %d", n, tt.live)
			}
			if r := c.one(`{"jsonrpc":"2.0","id":"s3","method":"resources/subscribe","params":{"uri":"file:///a.txt"}}`); r.Error != nil {
				t.Errorf("subscribing again: %+v", r.Error)
			}
			if n := c.cat.Subscriptions(); n != 1 {
				t.Errorf("%d live subscriptions after subscribing again, want 1", n)
			}
		})
	}
}

// TestSubscribeAllCancelledLeavesNothing: when a first resources/subscribe
// and the repeated ones waiting for it are all cancelled, in either order,
// nothing of them stays in the session: another URI can be subscribed
// within a limit of one.
func TestSubscribeAllCancelledLeavesNothing(t *testing.T) {
	t.Parallel()
	for name, order := range map[string][]string{"first last": {"s2", "s3", "s1"}, "first first": {"s1", "s2", "s3"}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, clientOptions{server: Options{MaxInFlight: 1, MaxSubscriptions: 1}})
			c.initialize("2025-11-25")
			c.write(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slow","arguments":{}}}`)
			c.settle() // parked, holding the one slot
			for _, id := range []string{"s1", "s2", "s3"} {
				c.write(`{"jsonrpc":"2.0","id":"` + id + `","method":"resources/subscribe","params":{"uri":"file:///a.txt"}}`)
			}
			for _, id := range order {
				c.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + id + `"}}`)
			}
			// The slow call stays; a subscription that took s1's place
			// would wait for its slot.
			c.await("the subscribes to end", func() bool { return c.obs.reads.Load() > c.sent && c.session.Load().Pending() == 1 })
			if out := c.take(); len(out) != 0 {
				t.Errorf("cancelled subscribes were answered: %q", out)
			}
			c.await("a call to park", c.cat.ReleaseOne)
			c.settle()
			c.take()
			if r := c.one(`{"jsonrpc":"2.0","id":"b","method":"resources/subscribe","params":{"uri":"file:///b.txt"}}`); r.Error != nil {
				t.Errorf("subscribing to another URI within a limit of one: %+v", r.Error)
			}
			if n := c.cat.Subscriptions(); n != 1 {
				t.Errorf("%d live subscriptions, want 1", n)
			}
		})
	}
}
