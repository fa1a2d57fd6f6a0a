package fanout

import (
	"testing"
	"time"
)

// A watcher stuck in its callback holds up neither Notify nor the other
// watchers, and gets each ID queued meanwhile once.
func TestSlowWatcher(t *testing.T) {
	t.Parallel()
	var h Hub
	defer h.Close()
	release := make(chan struct{})
	slow := make(chan string, 100)
	h.Watch(func(id string) {
		slow <- id
		<-release
	})
	fast := make(chan string, 100)
	h.Watch(func(id string) { fast <- id })

	h.Notify("first")
	if got := recv(t, slow); got != "first" {
		t.Fatalf("slow watcher got %q, want first", got)
	}
	for range 1000 { // the slow watcher is stuck in its callback
		h.Notify("a")
		h.Notify("b")
	}
	for _, want := range []string{"first", "a", "b"} {
		if got := recv(t, fast); got != want {
			t.Fatalf("fast watcher got %q, want %q", got, want)
		}
	}
	close(release)
	for _, want := range []string{"a", "b"} {
		if got := recv(t, slow); got != want {
			t.Fatalf("slow watcher got %q, want %q", got, want)
		}
	}
	h.Notify("last")
	if got := recv(t, slow); got != "last" {
		t.Errorf("slow watcher got %q, want last (each of a and b once)", got)
	}
}

// stop takes the watcher out of the hub and ends its goroutine; after
// Close, Watch adds none.
func TestStop(t *testing.T) {
	t.Parallel()
	var h Hub
	got := make(chan string, 10)
	stop := h.Watch(func(id string) { got <- id })
	h.Notify("a")
	recv(t, got)
	var w *watcher
	for w = range h.watchers {
	}
	stop()
	stop()
	if len(h.watchers) != 0 {
		t.Errorf("the hub holds %d watchers after stop, want 0", len(h.watchers))
	}
	select {
	case <-w.done:
	default:
		t.Error("the stopped watcher's goroutine was not told to end")
	}
	h.Close()
	h.Watch(func(id string) { got <- id })()
	if h.watchers != nil {
		t.Errorf("Watch after Close added a watcher")
	}
}

func recv(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case id := <-c:
		return id
	case <-time.After(10 * time.Second):
		t.Fatal("no notice within 10s")
		return ""
	}
}
