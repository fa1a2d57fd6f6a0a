package audit

import (
	"encoding/json"
	"time"
)

// The console's view of the audit log (its page of recent lines) and the
// line of an approval a person gave there.

// RecentLines is how many of the last lines a Log keeps in memory for
// Recent.
const RecentLines = 200

// recentLines is a ring of the last RecentLines lines written (l.mu held
// by its callers). A line is at most a call's line with MaxArguments of
// arguments, so the ring holds a bounded amount.
type recentLines struct {
	lines [RecentLines]string
	next  int // where the next line goes
	n     int // lines held
}

func (r *recentLines) add(line string) {
	r.lines[r.next] = line
	r.next = (r.next + 1) % RecentLines
	r.n = min(r.n+1, RecentLines)
}

// Recent returns the last lines written (at most n, and at most
// RecentLines), oldest first, without their newlines. A line that failed
// to reach the file is among them: it was meant to be written.
func (l *Log) Recent(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = min(n, l.recent.n)
	out := make([]string, 0, max(n, 0))
	for i := range max(n, 0) {
		out = append(out, l.recent.lines[(l.recent.next-n+i+RecentLines)%RecentLines])
	}
	return out
}

// Approval is an approval or a revocation a person made in the console:
// who (By, as the console names them: "alice via https://issuer", "the
// static token's holder"), of which plugin and file digest. The trust
// line that follows when the host applies it says the new state.
type Approval struct {
	Time time.Time
	// Action is "approve" or "revoke".
	Action, Plugin, Digest, By string
	// Pinned is how many definitions the approval pins.
	Pinned int
}

// approvalLine is the line of an Approval.
type approvalLine struct {
	Time   string `json:"time"`
	Event  string `json:"event"` // "approve" or "revoke"
	Plugin string `json:"plugin"`
	Digest string `json:"digest,omitempty"`
	By     string `json:"by"`
	Pinned int    `json:"pinned,omitempty"`
}

// Approval writes the line of a console approval or revocation:
// {"time":…,"event":"approve","plugin":"echo","digest":"sha256:…","by":"alice via https://id.example","pinned":3}.
func (l *Log) Approval(a Approval) {
	b, err := json.Marshal(&approvalLine{Time: a.Time.UTC().Format(time.RFC3339Nano), Event: a.Action, Plugin: a.Plugin,
		Digest: a.Digest, By: a.By, Pinned: a.Pinned})
	if err != nil { // cannot happen: strings and a number
		l.log.Error("audit line not written", "plugin", a.Plugin, "error", err)
		return
	}
	l.write(b)
}
