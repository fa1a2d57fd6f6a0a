package mcp

import (
	"sync"
	"sync/atomic"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Notifications unrelated to any request: list_changed of tools, resources
// and prompts, and resources/updated of the resources the client
// subscribed to. The catalog's callbacks never block: they record what is
// due and wake the session's notifier goroutine, which writes. Whatever
// happens while a notification is due coalesces into it: one list_changed
// per kind per burst, one resources/updated per URI.
type notices struct {
	wake  chan struct{} // 1-buffered: the notifier has something due
	lists atomic.Uint32 // the kinds whose list_changed is due (listBit)
	// own: list_changed due for a change of the session's own list
	// (found tools), which the caller's view does not filter
	own atomic.Uint32

	mu      sync.Mutex
	updated dueURIs

	unsubscribe func() // from the catalog's list changes
	unwatch     func() // from the catalog's resource updates
}

// The kinds of list, as bits of notices.lists, in the order their
// list_changed is written.
const (
	listTools uint32 = 1 << iota
	listResources
	listPrompts
)

var listChanged = [...]struct {
	bit    uint32
	method string
}{
	{listTools, "notifications/tools/list_changed"},
	{listResources, "notifications/resources/list_changed"},
	{listPrompts, "notifications/prompts/list_changed"},
}

// changeBits returns the kinds a change names, as bits (listBit).
func changeBits(c tool.Change) uint32 {
	var bits uint32
	if c.Tools {
		bits |= listTools
	}
	if c.Resources {
		bits |= listResources
	}
	if c.Prompts {
		bits |= listPrompts
	}
	return bits
}

// listsChanged is the catalog's change callback.
func (s *Session) listsChanged(c tool.Change) {
	if bits := changeBits(c); bits != 0 {
		s.notes.lists.Or(bits)
		s.wakeNotifier()
	}
}

// resourceUpdated is the catalog's resource update callback: a
// resources/updated is due if this session subscribed to uri.
func (s *Session) resourceUpdated(uri string) {
	if !s.subs.has(uri) {
		return
	}
	n := &s.notes
	n.mu.Lock()
	added := n.updated.add(uri)
	n.mu.Unlock()
	if added {
		s.wakeNotifier()
	}
}

// dueURIs are the URIs whose resources/updated is due, each once, in the
// order they came.
type dueURIs struct {
	list []string
	set  map[string]bool
}

// add records uri; it reports false when uri was due already.
func (d *dueURIs) add(uri string) bool {
	if d.set[uri] {
		return false
	}
	if d.set == nil {
		d.set = map[string]bool{}
	}
	d.set[uri] = true
	d.list = append(d.list, uri)
	return true
}

// take returns the URIs due and forgets them.
func (d *dueURIs) take() []string {
	list := d.list
	d.list, d.set = nil, nil
	return list
}

// wakeNotifier tells the notifier something is due, recorded before the
// call: the notifier takes everything due after it wakes. It never blocks.
func (s *Session) wakeNotifier() {
	s.pending.Add(1)
	select {
	case s.notes.wake <- struct{}{}:
	default: // already awake: it will see what was recorded
		s.pending.Add(-1)
	}
}

func (s *Session) notifier() {
	defer s.work.Done()
	n := &s.notes
	for {
		select {
		case <-s.done:
			return
		case <-n.wake:
			bits := s.view.sums.changed(s.srv, s.view.guard(), n.lists.Swap(0)) | n.own.Swap(0)
			n.mu.Lock()
			updated := n.updated.take()
			n.mu.Unlock()
			if s.Initialized() {
				for _, l := range listChanged {
					if bits&l.bit != 0 {
						s.send(s.conn.Notify, func(b []byte) []byte { return jsonrpc.AppendNotification(b, l.method, nil) })
					}
				}
				for _, uri := range updated {
					if !s.subs.has(uri) { // unsubscribed meanwhile
						continue
					}
					s.send(s.conn.Notify, func(b []byte) []byte {
						b = jsonrpc.AppendNotificationHead(b, "notifications/resources/updated")
						b = append(b, `,"params":{"uri":`...)
						b = jsonrpc.AppendString(b, uri)
						return append(b, "}}"...)
					})
				}
			}
			s.idle()
		}
	}
}
