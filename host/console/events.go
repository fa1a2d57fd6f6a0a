package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The console's live updates: GET Path+"/events" is a Server-Sent Events
// stream of "plugin" events ({"plugin":NAME,"kind":KIND}); console.js
// refetches the page it shows on each. One Source.Watch feeds every open
// stream (eventHub), so a hundred tabs cost the host one watcher.
const (
	// defaultMaxStreams bounds the open streams (Options.MaxStreams):
	// each holds a connection and a goroutine.
	defaultMaxStreams = 64
	// streamBuffer is how many events a stream may have waiting; a
	// browser that lets more pile up is dropped (its EventSource
	// reconnects and its page refetches), never waited for.
	streamBuffer = 16
	// keepAlive is how often an idle stream gets a comment, so proxies
	// and browsers keep it open.
	keepAlive = 25 * time.Second
	// eventWriteTimeout bounds one write to a browser: a stalled reader
	// loses its stream.
	eventWriteTimeout = 10 * time.Second
)

var (
	errTooManyStreams = errors.New("too many open event streams")
	errConsoleClosed  = errors.New("the console is closed")
)

// eventHub fans one Source.Watch out to the open streams. The watch
// starts with the first stream (a console no browser opens watches
// nothing) and ends with Close.
type eventHub struct {
	src   Source
	max   int
	log   hclog.Logger
	watch sync.Once

	mu      sync.Mutex
	streams map[chan Event]struct{}
	stop    func() // ends the Source's watch; nil before it starts
	closed  bool
}

func newEventHub(src Source, max int, log hclog.Logger) *eventHub {
	return &eventHub{src: src, max: max, log: log, streams: map[chan Event]struct{}{}}
}

// subscribe opens a stream: a channel of events, closed when the stream
// is dropped (too slow) or the console closes.
func (e *eventHub) subscribe() (chan Event, error) {
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return nil, errConsoleClosed
	case len(e.streams) >= e.max:
		e.mu.Unlock()
		return nil, errTooManyStreams
	}
	ch := make(chan Event, streamBuffer)
	e.streams[ch] = struct{}{}
	e.mu.Unlock()
	// Outside the lock: a Source may call publish from inside Watch.
	e.watch.Do(func() {
		stop := e.src.Watch(e.publish)
		e.mu.Lock()
		closed := e.closed // Close ran meanwhile and found no watch to stop
		if !closed {
			e.stop = stop
		}
		e.mu.Unlock()
		if closed {
			stop()
		}
	})
	return ch, nil
}

// unsubscribe closes a stream the browser left.
func (e *eventHub) unsubscribe(ch chan Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.streams[ch]; ok {
		delete(e.streams, ch)
		close(ch)
	}
}

// publish gives ev to every stream without blocking (Source.Watch's
// changed must not block): a stream whose buffer is full is dropped.
func (e *eventHub) publish(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.streams {
		select {
		case ch <- ev:
		default:
			delete(e.streams, ch)
			close(ch)
			e.log.Debug("console event stream dropped: the browser does not keep up")
		}
	}
}

// close ends the watch and every stream.
func (e *eventHub) close() {
	e.mu.Lock()
	e.closed = true
	stop := e.stop
	e.stop = nil
	for ch := range e.streams {
		delete(e.streams, ch)
		close(ch)
	}
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Close ends the console's live updates: the Source's watch and every
// open event stream. Pages still answer; a new stream is refused.
func (h *Handler) Close() { h.events.close() }

// eventsStream is GET Path+"/events": the stream of one page.
func (h *Handler) eventsStream(w http.ResponseWriter, r *http.Request, u *user) {
	ch, err := h.events.subscribe()
	switch {
	case errors.Is(err, errTooManyStreams):
		h.log.Warn("console event stream refused: too many open", "max", h.events.max, "user", u.name)
		http.Error(w, "too many open console event streams (at most "+strconv.Itoa(h.events.max)+
			"); close some console tabs", http.StatusServiceUnavailable)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer h.events.unsubscribe(ch)

	rc := http.NewResponseController(w)
	defer rc.SetWriteDeadline(time.Time{}) // the connection may serve more requests
	send := func(b []byte) error {
		rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if send([]byte(": plughost console events\n\n")) != nil {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		var msg []byte
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return // dropped, or the console closed
			}
			msg = eventMessage(ev)
		case <-tick.C:
			msg = []byte(": keepalive\n\n")
		}
		// The stream outlives no session: a user who logged out, whose
		// session expired or whom the rules stopped admitting gets
		// nothing more.
		if u = identify.signedIn(h, r); u == nil || !h.may(u, "console", "") {
			return
		}
		if send(msg) != nil {
			return
		}
	}
}

// eventMessage is ev as one SSE event. Its data is JSON, which escapes
// line breaks, so a plugin's name cannot end the event or forge another.
func eventMessage(ev Event) []byte {
	data, _ := json.Marshal(struct {
		Plugin string `json:"plugin"`
		Kind   string `json:"kind"`
	}{ev.Plugin, ev.Kind})
	b := append([]byte("event: plugin\ndata: "), data...)
	return append(b, "\n\n"...)
}
