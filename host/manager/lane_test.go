package manager

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A plugin that breaks its frame lane's framing fails the call then in
// flight, the host logs why, and the plugin is restarted; the new process
// has a lane of its own.
func TestLaneBreachRestartsThePlugin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{BackoffInitial: 10 * time.Millisecond})
	e := h.expect("set", "tp")
	pid1 := mustPID(t, e.p)

	if _, err := call(t, e.p, "breaklane", ""); err == nil || !strings.Contains(err.Error(), "does not decode") {
		t.Fatalf("call breaklane: %v, want the lane's breach named", err)
	}
	entry := h.logs.await(t, "test", "the plugin broke its frame lane; restarting it")
	if why, _ := entry["error"].(string); !strings.Contains(why, "lane framing broken") {
		t.Errorf("the log says %q, want the framing's breach", why)
	}
	eventually(t, "the restart", func() bool { s := h.status("tp"); return s.PID != 0 && s.PID != pid1 })
	h.expect("set", "tp")
	if pid := mustPID(t, e.p); pid == pid1 {
		t.Errorf("after the breach, calls reach pid %d, the process that broke its lane", pid)
	}
	h.logs.awaitCount(t, "test", "plugin described", 2)
	h.logs.mu.Lock()
	defer h.logs.mu.Unlock()
	for _, e := range h.logs.entries {
		if e["@message"] == "plugin described" && e["calls"] != "frame lane" {
			t.Errorf("a process of the plugin described itself with calls on %v, want the frame lane", e["calls"])
		}
	}
}
