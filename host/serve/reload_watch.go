package serve

import (
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/plughost/plughost/internal/dirwatch"
)

// reloadSettle is how long the configuration's directory must be quiet
// after an event before the file is read again: an editor's save or a
// ConfigMap update is several events (a temporary file written, renamed
// over; ..data swapped), and a reload of a half-written file would be
// refused for nothing.
const reloadSettle = 500 * time.Millisecond

// watchReloads reloads the configuration on SIGHUP and whenever the
// --config file's content changes, until stop is called (before the host
// stops). The file's directory is watched, not the file: an editor or a
// configuration manager renames a new file over it, and a Kubernetes
// ConfigMap volume swaps its ..data link; a write to another file of the
// directory (an audit log beside it) leaves the content as it was and
// reloads nothing. A directory that cannot be watched leaves SIGHUP, and
// says so.
func (h *Host) watchReloads() (stop func()) {
	log := h.log.Named("config")
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-hup:
				log.Info("SIGHUP: reloading the configuration")
				_ = h.Reload() // logged and counted
			case <-done:
				return
			}
		}
	}()
	var w *dirwatch.Watcher
	if path := h.reloads.check.Config; path != "" {
		var err error
		w, err = dirwatch.Start([]string{filepath.Dir(path)}, reloadSettle,
			func(err error) { log.Warn("watching the configuration file", "error", err) },
			func() {
				if h.reloads.changedOnDisk() {
					log.Info("the configuration file changed: reloading it", "file", path)
					_ = h.Reload()
				}
			})
		if err != nil {
			log.Warn("the configuration file's changes are not followed (SIGHUP still reloads it)", "error", err)
		}
	}
	return func() {
		signal.Stop(hup)
		if w != nil {
			w.Close()
		}
		close(done)
		<-ended
	}
}

// keptEnv reads the environment, but names from a copy of the values they
// have now: the secrets among them leave the environment once the
// services are open (a plugin run without the sandbox would inherit
// them), and a reload checks the configuration with them as check does.
func keptEnv(names []string) func(string) string {
	kept := map[string]string{}
	for _, name := range names {
		if v, ok := os.LookupEnv(name); ok {
			kept[name] = v
		}
	}
	return func(name string) string {
		if v, ok := kept[name]; ok {
			return v
		}
		return os.Getenv(name)
	}
}
