package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestResultOverLimit: a plugin's 20 MB result is refused under the
// default limits { result_size } (16 MiB): the client gets an isError
// result naming both sizes and the setting, the plugin's next call is
// served, and the host's resident memory stays far below the result's
// size (logged: the figure of the report).
func TestResultOverLimit(t *testing.T) {
	t.Parallel()
	h := startTestHost(t, "bigplugin")
	h.awaitTools("big", "small")
	before := residentKiB(t, h.cmd.Process.Pid)
	for range 2 {
		res := h.call("big", map[string]any{"size": 20 << 20})
		msg := text(res)
		if !res.IsError || !strings.Contains(msg, "over MaxResultSize (16777216 bytes)") || !strings.Contains(msg, "a message of 2097") ||
			!strings.Contains(msg, "result_size") {
			t.Fatalf("a 20 MiB result: isError %v, %.300s; want isError naming both sizes and limits { result_size }", res.IsError, msg)
		}
		if res := h.call("small", nil); res.IsError || text(res) != "ok" {
			t.Fatalf("the plugin's next call: isError %v, %q", res.IsError, text(res))
		}
	}
	after := residentKiB(t, h.cmd.Process.Pid)
	t.Logf("host resident memory: %d KiB before, %d KiB after two 20 MiB results refused", before, after)
	if after-before > 16<<10 {
		t.Errorf("host resident memory grew by %d KiB over two refused 20 MiB results, want under 16 MiB", after-before)
	}
}

// TestTooManyTools: a plugin offering 50 000 tools fails to load under
// the default limits { items } (10 000), and plughost plugins says why.
func TestTooManyTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyPlugin(t, "bigplugin", dir, "manytools")
	copyPlugin(t, "bigplugin", dir, "bigplugin")
	stdout, stderr, err := tryCLI(t, "plugins", "--plugins", dir)
	if code := exitCode(err); code != 1 {
		t.Errorf("plughost plugins exited with %d (%v), want 1\nstderr:\n%s", code, err, stderr)
	}
	if !strings.Contains(stdout, "manytools") || !strings.Contains(stdout, "50002 items, over MaxItems (10000)") {
		t.Errorf("plughost plugins does not show manytools failing over MaxItems:\n%s", stdout)
	}
	if !strings.Contains(stdout, "bigplugin") || !strings.Contains(stdout, "  small") {
		t.Errorf("plughost plugins does not show bigplugin's tools:\n%s", stdout)
	}
}

// residentKiB reads a process's resident memory (VmRSS), in KiB.
func residentKiB(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range bytes.Lines(status) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"))
			if err != nil {
				t.Fatalf("VmRSS %q: %v", rest, err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/PID/status")
	return 0
}
