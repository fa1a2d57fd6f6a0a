package manager

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// A plugin's stderr lines reach its recent lines (stdout's do not; blank
// lines are skipped), and the ring keeps only the newest recentLines
// lines within recentBytes, a long line cut on a character boundary: a
// plugin writing without end holds a fixed amount of the host's memory.
func TestRecentStderrBounded(t *testing.T) {
	t.Parallel()
	o := newPluginOutput(hclog.NewNullLogger(), "noisy")
	stderr, stdout := o.writer("stderr"), o.writer("stdout")
	fmt.Fprint(stdout, "on stdout\n")
	fmt.Fprint(stderr, "first\n\n   \n")
	if got := o.recent.snapshot(); len(got) != 1 || got[0] != "first" {
		t.Fatalf("recent lines = %q, want [first]", got)
	}
	for i := range 3 * recentLines {
		fmt.Fprintf(stderr, "line %d\n", i)
	}
	got := o.recent.snapshot()
	if len(got) != recentLines || got[0] != fmt.Sprintf("line %d", 2*recentLines) || got[len(got)-1] != fmt.Sprintf("line %d", 3*recentLines-1) {
		t.Fatalf("after %d lines, kept %d from %q to %q; want the last %d", 3*recentLines, len(got), got[0], got[len(got)-1], recentLines)
	}
	long := strings.Repeat("é", recentLine) // 2 bytes each: cut mid-way
	for range recentLines {
		fmt.Fprint(stderr, long+"\n")
	}
	got = o.recent.snapshot()
	size := 0
	for _, l := range got {
		size += len(l)
		if !strings.HasSuffix(l, "…") || !strings.HasPrefix(l, "éé") || strings.ContainsRune(l, '\uFFFD') {
			t.Fatalf("a long line kept as %.40q…: want it cut on a character, marked …", l)
		}
	}
	if size > recentBytes+recentLines*len("…") || len(got) == 0 {
		t.Fatalf("kept %d lines of %d bytes: want at most %d bytes", len(got), size, recentBytes)
	}
}
