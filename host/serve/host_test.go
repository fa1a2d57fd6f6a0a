package serve

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/manager"
)

// TestHostReady: the host is not ready while the plugins found at start
// load, is once they have, and is not when the manager has stopped.
func TestHostReady(t *testing.T) {
	t.Parallel()
	mgr, err := manager.New(&manager.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	h := &Host{manager: mgr, runEnded: make(chan struct{})}
	if err := h.ready(); err == nil || err.Error() != "the plugins found at start are still loading" {
		t.Errorf("ready before Run = %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	select {
	case <-mgr.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the manager of an empty directory never got ready")
	}
	if err := h.ready(); err != nil {
		t.Errorf("ready once loaded = %v", err)
	}
	cancel()
	<-done

	h.runErr = errors.New("manager: watch /x: permission denied")
	close(h.runEnded)
	if err := h.ready(); err == nil || !strings.Contains(err.Error(), "the plugin manager stopped: manager: watch /x: permission denied") {
		t.Errorf("ready after Run failed = %v", err)
	}
}
