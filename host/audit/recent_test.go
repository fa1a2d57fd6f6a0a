package audit

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The console's approval line says who approved what.
func TestApprovalLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	at := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	l := New(&buf, nil)
	l.Approval(Approval{Time: at, Action: "approve", Plugin: "echo", Digest: "sha256:ab", By: "alice via https://id.example", Pinned: 2})
	l.Approval(Approval{Time: at, Action: "revoke", Plugin: "echo", By: "the static token's holder"})
	want := `{"time":"2026-11-28T15:00:00Z","event":"approve","plugin":"echo","digest":"sha256:ab","by":"alice via https://id.example","pinned":2}
{"time":"2026-11-28T15:00:00Z","event":"revoke","plugin":"echo","by":"the static token's holder"}
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

// Recent returns the last lines written, oldest first, at most n and at
// most RecentLines, even when the file failed to take them.
func TestRecentLines(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := New(&buf, nil)
	if got := l.Recent(10); len(got) != 0 {
		t.Fatalf("Recent of a new log = %q, want none", got)
	}
	for i := range RecentLines + 5 {
		l.Trust(TrustChange{Plugin: fmt.Sprint("p", i), Mode: "pinned", State: "pending"})
	}
	got := l.Recent(1000)
	if len(got) != RecentLines {
		t.Fatalf("Recent(1000) gave %d lines, want %d", len(got), RecentLines)
	}
	if want := `"plugin":"p5"`; !bytes.Contains([]byte(got[0]), []byte(want)) {
		t.Errorf("oldest line kept = %s, want the one of p5", got[0])
	}
	last := l.Recent(2)
	if len(last) != 2 || !bytes.Contains([]byte(last[1]), []byte(fmt.Sprintf(`"plugin":"p%d"`, RecentLines+4))) {
		t.Errorf("Recent(2) = %q, want the last two lines, newest last", last)
	}
	failing := New(writerFunc(func([]byte) (int, error) { return 0, errors.New("disk full") }), nil)
	failing.Trust(TrustChange{Plugin: "x", Mode: "pinned", State: "pending"})
	if got := failing.Recent(5); len(got) != 1 {
		t.Errorf("Recent after a failed write = %q, want the line", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
