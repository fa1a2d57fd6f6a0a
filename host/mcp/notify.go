package mcp

// listChanges sends notifications/tools/list_changed when the catalog's
// list changes: a burst while one is due coalesces into it.
type listChanges struct {
	changed     chan struct{} // list_changed is due (1-buffered)
	unsubscribe func()
}

// toolsChanged is the catalog's change callback. It never blocks: the
// notifier goroutine writes.
func (s *Session) toolsChanged() {
	s.pending.Add(1)
	select {
	case s.lists.changed <- struct{}{}:
	default: // already due
		s.pending.Add(-1)
	}
}

func (s *Session) notifier() {
	defer s.work.Done()
	for {
		select {
		case <-s.done:
			return
		case <-s.lists.changed:
			if s.Initialized() {
				s.write(s.conn.Notify, []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
			}
			s.idle()
		}
	}
}
