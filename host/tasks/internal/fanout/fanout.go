// Package fanout hands the IDs of changed tasks to the watchers of a
// store (tasks.Store.Watch), each on a goroutine of its own: a writer only
// queues the ID, so a slow watcher never holds up an update, and no
// watcher runs under the store's lock.
//
// A watcher's queue holds each ID once: an ID noticed again before the
// watcher took it is not queued twice, since the watcher re-reads the task
// anyway. The queue is so bounded by the number of tasks.
package fanout

import "sync"

// Hub is the set of watchers of one store. The zero Hub is ready to use.
type Hub struct {
	mu       sync.Mutex
	watchers map[*watcher]struct{}
	closed   bool
}

type watcher struct {
	changed func(id string)
	wake    chan struct{} // holds one token while the queue is not empty
	done    chan struct{} // closed by stop
	once    sync.Once

	mu      sync.Mutex
	pending []string
	queued  map[string]bool
}

// Watch calls changed with every ID given to Notify from now on, on a
// goroutine of its own, until stop is called. A call under way when stop
// is called goes on; no other follows. After Close, changed is never
// called.
func (h *Hub) Watch(changed func(id string)) (stop func()) {
	w := &watcher{changed: changed, wake: make(chan struct{}, 1), done: make(chan struct{}), queued: map[string]bool{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return func() {}
	}
	if h.watchers == nil {
		h.watchers = map[*watcher]struct{}{}
	}
	h.watchers[w] = struct{}{}
	go w.run()
	return func() {
		h.mu.Lock()
		delete(h.watchers, w)
		h.mu.Unlock()
		w.stop()
	}
}

// Notify queues id for every watcher. It never blocks on a watcher.
func (h *Hub) Notify(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watchers {
		w.queue(id)
	}
}

// Close stops every watcher; later calls of Watch and Notify do nothing.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for w := range h.watchers {
		w.stop()
	}
	h.watchers = nil
}

func (w *watcher) stop() { w.once.Do(func() { close(w.done) }) }

func (w *watcher) queue(id string) {
	w.mu.Lock()
	if !w.queued[id] {
		w.queued[id] = true
		w.pending = append(w.pending, id)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // a token is there already
	}
}

func (w *watcher) run() {
	for {
		select {
		case <-w.done:
			return
		case <-w.wake:
		}
		w.mu.Lock()
		ids := w.pending
		w.pending = nil
		clear(w.queued)
		w.mu.Unlock()
		for _, id := range ids {
			select {
			case <-w.done:
				return
			default:
				w.changed(id)
			}
		}
	}
}
