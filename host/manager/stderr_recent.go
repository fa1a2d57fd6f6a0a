package manager

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// The running plugin's last stderr lines (PluginStatus.Stderr), for the
// console's plugin page: what a plugin says while it works, which the
// excerpt (kept for error messages, head and tail) does not show once the
// head is full. Bounded in lines and in bytes, so that a plugin writing
// long lines fast holds a fixed amount of the host's memory.

const (
	// recentLines is how many of its last stderr lines a running plugin's
	// status keeps.
	recentLines = 50
	// recentBytes bounds those lines' total size; recentLine bounds one
	// (a longer one is kept cut, marked with "…").
	recentBytes = 8 << 10
	recentLine  = 1 << 10
)

// recentStderr is a ring of a plugin process's last stderr lines.
type recentStderr struct {
	mu    sync.Mutex
	lines []string // oldest first
	size  int      // the bytes of lines
}

// add keeps line as the newest, dropping the oldest past the bounds.
func (r *recentStderr) add(line string) {
	if len(line) > recentLine {
		line = cutAtRune(line, recentLine) + "…"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
	r.size += len(line)
	for len(r.lines) > recentLines || r.size > recentBytes {
		r.size -= len(r.lines[0])
		r.lines[0] = ""
		r.lines = r.lines[1:]
	}
}

// snapshot returns the lines kept, oldest first (a copy).
func (r *recentStderr) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// cutAtRune is s's first n bytes at most, not ending in part of a
// character.
func cutAtRune(s string, n int) string {
	s = s[:n]
	for i := 0; i < utf8.UTFMax-1 && len(s) > 0; i++ {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return strings.ToValidUTF8(s, "")
}
