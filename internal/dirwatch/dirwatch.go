// Package dirwatch follows files that are replaced rather than written in
// place. It watches their directories (a certificate manager renames a new
// file over the old one; a Kubernetes ConfigMap or Secret volume swaps a
// ..data symbolic link), and once a directory has been quiet for a while
// after an event, it says so once: a burst of events (a certificate, then
// its key) is one change. What changed is for the caller to read again.
package dirwatch

import (
	"fmt"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher calls its changed func after each settled burst of events in
// its directories, until Close.
type Watcher struct {
	w    *fsnotify.Watcher
	done chan struct{} // closed when the loop returns
}

// Start watches dirs (each once) and calls changed, on a goroutine of its
// own, once they have been quiet for settle after an event; onError gets
// the watcher's errors. The directories must exist.
func Start(dirs []string, settle time.Duration, onError func(error), changed func()) (*Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching %v: %w", dirs, err)
	}
	seen := map[string]bool{}
	for _, dir := range dirs {
		if seen[dir] {
			continue
		}
		seen[dir] = true
		if err := w.Add(dir); err != nil {
			w.Close()
			return nil, fmt.Errorf("watching %s: %w", dir, err)
		}
	}
	dw := &Watcher{w: w, done: make(chan struct{})}
	go dw.loop(settle, onError, changed)
	return dw, nil
}

// Close stops watching and returns once changed is no longer called.
func (dw *Watcher) Close() error {
	err := dw.w.Close()
	<-dw.done
	return err
}

func (dw *Watcher) loop(settle time.Duration, onError func(error), changed func()) {
	defer close(dw.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case _, ok := <-dw.w.Events:
			if !ok {
				return
			}
			timer.Reset(settle)
		case err, ok := <-dw.w.Errors:
			if !ok {
				return
			}
			onError(err)
		case <-timer.C:
			changed()
		}
	}
}
