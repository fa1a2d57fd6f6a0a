//go:build unix

package manager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/plughost/plughost/host/tool"
)

// A plugin that is still starting is waited for, and that wait does not
// count against the question's deadline; a cancel ends the wait at once.
func TestAskHookWaitsForTheStartOutsideTheHookTimeout(t *testing.T) {
	t.Parallel()
	bin := hookPlugin(t)
	dir, fifoDir := t.TempDir(), t.TempDir()
	fifo := filepath.Join(fifoDir, "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The plugin starts only once the test writes a line to the fifo.
	writeScript(t, filepath.Join(dir, "guard"), "read x < "+fifo+"\nexec "+bin)
	h := start(t, dir, Options{StartTimeout: waitLong})
	eventually(t, "the plugin loading", func() bool {
		return slices.ContainsFunc(h.m.Status(), func(s PluginStatus) bool { return s.Name == "guard" && s.State == StateLoading })
	})

	cancelled, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() {
		_, err := h.m.AskHook(cancelled, "guard", &tool.HookCall{Point: tool.BeforeCall, Hook: "refuse"})
		stopped <- err
	}()
	cancel()
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("a question cancelled while the plugin starts: %v, want context.Canceled", err)
	}

	// The hook's timeout (1 s) passes while the plugin starts: the
	// question still gets its second once the plugin runs.
	timed, cancelTimed := context.WithTimeout(t.Context(), time.Second)
	defer cancelTimed()
	answered := make(chan error, 1)
	go func() {
		a, err := h.m.AskHook(timed, "guard", &tool.HookCall{Point: tool.BeforeCall, Hook: "refuse"})
		if err == nil && a.Decision != tool.HookRefuse {
			err = errors.New("answer " + string(a.Decision))
		}
		answered <- err
	}()
	<-timed.Done()
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("go\n")
	_ = f.Close()
	if err := <-answered; err != nil {
		t.Fatalf("a question whose timeout passed while the plugin started: %v", err)
	}
	if _, err := h.m.AskHook(t.Context(), "guard", &tool.HookCall{Point: tool.BeforeCall, Hook: "pass"}); err != nil {
		t.Fatal(err)
	}
}
