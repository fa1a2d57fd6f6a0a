package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReopen: a reload moves the log to another file and turns the
// arguments on: the first file keeps what came before, the second gets
// what comes after, with the arguments; a path that cannot be opened
// leaves the log where it was.
func TestReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, second := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	l, err := Open(first, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.CallEnd(end(`{"before":1}`))
	if err := l.Reopen(second, true); err != nil {
		t.Fatal(err)
	}
	l.CallEnd(end(`{"after":2}`))
	if err := l.Reopen(filepath.Join(dir, "missing", "c.jsonl"), false); err == nil || !strings.Contains(err.Error(), "audit log") {
		t.Errorf("Reopen in a missing directory: %v, want an error naming the audit log", err)
	}
	l.CallEnd(end(`{"still":3}`))
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(first); strings.Count(got, "\n") != 1 || strings.Contains(got, `"before"`) {
		t.Errorf("the first file: %q; want one line, without its arguments", got)
	}
	if got := read(second); strings.Count(got, "\n") != 2 || !strings.Contains(got, `{"after":2}`) || !strings.Contains(got, `{"still":3}`) {
		t.Errorf("the second file: %q; want the two lines after the reopen, with their arguments", got)
	}
}
