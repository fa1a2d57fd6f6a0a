package audit

import (
	"fmt"
	"io"
	"os"
)

// Reopen makes the log write to path from the next line on ("-":
// stderr), with or without the calls' arguments, and closes the file it
// wrote to before: a configuration reload that moves the audit log or
// changes its arguments setting. A line being written finishes in the old
// file; none is lost or split. When path cannot be opened, the log goes
// on where it was and the error says why.
func (l *Log) Reopen(path string, arguments bool) error {
	var w io.Writer = os.Stderr
	var c io.Closer
	if path != "-" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		w, c = f, f
	}
	l.mu.Lock()
	old := l.c
	l.w, l.c, l.lost = w, c, 0
	l.mu.Unlock()
	l.args.Store(arguments)
	if old != nil {
		return old.Close()
	}
	return nil
}
