//go:build unix

package registrytest

import (
	"strings"
	"sync"
)

// logTailLines is how many of a server's last log lines a failure shows.
const logTailLines = 200

// logTail keeps the last lines of a server's log, for failure messages.
type logTail struct {
	mu    sync.Mutex
	lines []string
}

func (l *logTail) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == logTailLines {
		l.lines = append(l.lines[:0], l.lines[1:]...)
	}
	l.lines = append(l.lines, line)
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
