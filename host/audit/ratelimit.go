package audit

import (
	"encoding/json"
	"time"

	"github.com/plughost/plughost/host/mcp"
)

// rateLine is the line of a request refused over its caller's rate limits.
type rateLine struct {
	Time         string  `json:"time"`
	Event        string  `json:"event"` // "rate_limited"
	Session      string  `json:"session,omitempty"`
	Stateless    bool    `json:"stateless,omitempty"`
	Remote       string  `json:"remote,omitempty"`
	Caller       *caller `json:"caller,omitempty"`
	Method       string  `json:"method"`
	Tool         string  `json:"tool,omitempty"`
	Rule         string  `json:"rule"`
	Limit        string  `json:"limit"`
	RetryAfterMS int64   `json:"retry_after_ms"`
}

// RateLimited writes the line of a request refused over its caller's rate
// limits (host/mcp's Options.OnRateLimited): the rule and the limit, and
// the caller, whom the metrics never name.
//
//	{"time":"2026-11-28T09:00:00.5Z","event":"rate_limited","session":"Yh3…","remote":"10.0.0.7:50712",
//	 "caller":{"sub":"carl","client":"cli"},"method":"tools/call","tool":"echo","rule":"contractors","limit":"rate","retry_after_ms":200}
func (l *Log) RateLimited(e *mcp.RateLimited) {
	ln := rateLine{Time: e.Time.UTC().Format(time.RFC3339Nano), Event: "rate_limited", Session: e.Peer.SessionID, Stateless: e.Stateless,
		Remote: e.Peer.Remote, Method: e.Method, Tool: e.Tool, Rule: e.Refusal.Rule, Limit: e.Refusal.Limit,
		RetryAfterMS: (e.Refusal.RetryAfter + time.Millisecond - 1).Milliseconds()}
	if c := e.Peer.Caller; c.Subject != "" || c.ClientID != "" {
		ln.Caller = &caller{Subject: c.Subject, Client: c.ClientID}
	}
	b, err := json.Marshal(&ln)
	if err != nil { // cannot happen: strings and numbers
		l.log.Error("audit line not written", "method", e.Method, "error", err)
		return
	}
	l.write(b)
}
