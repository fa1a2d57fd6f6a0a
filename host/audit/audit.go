// Package audit writes plughost's audit log: one JSON object per line for
// every tools/call that ended, saying who called what and how it went. It
// is opt-in (the operator names a file), and it leaves the call's
// arguments out unless the operator asks for them, since they may carry
// what a user typed.
//
// A line, wrapped here:
//
//	{"time":"2026-07-28T10:00:00.123456Z","client":"claude-ai/0.1","session":"Yh3…","remote":"127.0.0.1:50712",
//	 "caller":{"sub":"alice","client":"claude-ai"},"tool":"echo","provider":"echo","outcome":"ok","duration_ms":1.52,"arguments_bytes":17,"result_bytes":52,
//	 "trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}
//
// time is when the call arrived (UTC); client the clientInfo
// "name/version" the client sent; session the transport's session id,
// absent on stdio; a request of the stateless revision (2026-07-28) has
// none and says "stateless":true instead; remote the client's address on
// HTTP. caller is who the client acts for: on HTTP with OAuth its access
// token's subject and OAuth client id (host/mcp's Caller), on stdio the
// local user's name; absent when unknown (HTTP without OAuth). tool and provider are as in the metrics (the provider is absent
// when none served the call), outcome one of host/mcp's Outcome values;
// trace_id is there when the request carried a W3C traceparent, task when
// the call went on as a task. With Options.Arguments, "arguments" holds
// the arguments as the client sent them, or, beyond MaxArguments bytes,
// their beginning as a string and "arguments_truncated":true.
//
// Each change of a plugin's trust state (host/trust: pending, approved,
// changed, revoked, signed, unsigned, …) is a line too, told apart by its
// "event":
//
//	{"time":"2026-11-26T09:30:00.5Z","event":"trust","plugin":"echo","mode":"pinned","state":"changed",
//	 "from":"approved","digest":"sha256:9f86d0…","reason":"changed since approval: digest sha256:9f86d0… was sha256:2cf24d…"}
//
// from is absent at a plugin's first check; signer is there for a valid
// signature, reason for a quarantined plugin. Each change of state of a
// plugin's definition (held back as pending or changed, served again once
// approved, changed and served in mode open) is an "event":"definition"
// line (see Log.Definition).
//
// Each decision of a guardrail hook (host/hooks) other than pass — a
// refusal, a rewrite, a hide, a failure, what a permissive hook would have
// done — is an "event":"hook" line naming the hook, the point, the item,
// its provider, the decision, the reason and the caller (see Log.Hook).
//
// Each approval or revocation a person makes in the console (host/console)
// is an "event":"approve" or "event":"revoke" line naming the plugin, the
// digest approved and the person ("by"; see Log.Approval). A Log keeps its
// last RecentLines lines in memory for the console's page (Log.Recent).
//
// Each request refused over its caller's rate limits (host/ratelimit) is
// an "event":"rate_limited" line naming the caller, the method, the tool,
// the rule and the limit (see Log.RateLimited).
//
// Lines are written whole, one write each, under a lock, on the goroutine
// that answered the call: a slow disk slows calls, a full one loses lines
// (the first failure is logged, and the count of lost lines with each
// later success).
package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/mcp"
)

// DefaultMaxArguments is Options.MaxArguments's default: 4 KiB.
const DefaultMaxArguments = 4 << 10

// Options configure a Log. The zero value logs no arguments.
type Options struct {
	// Arguments includes each call's arguments in its line.
	Arguments bool
	// MaxArguments bounds the arguments written, in bytes; longer ones
	// are cut (see the package doc). 0 means DefaultMaxArguments.
	MaxArguments int
	// Logger learns of failed writes. Nil discards.
	Logger hclog.Logger
}

// Log is an audit log. Its methods are safe for concurrent use.
type Log struct {
	opts Options
	log  hclog.Logger
	mu   sync.Mutex
	w    io.Writer
	c    io.Closer // nil when w is not ours to close
	lost int       // lines not written since the last that was
	buf  []byte
	// recent is the last lines written, for the console (Recent).
	recent recentLines
	once   sync.Once // Close's
	// args is Options.Arguments, which Reopen may change.
	args atomic.Bool
}

// Open opens the audit log at path, creating it (mode 0600) or appending
// to it; "-" writes to stderr. opts may be nil.
func Open(path string, opts *Options) (*Log, error) {
	if path == "-" {
		return New(os.Stderr, opts), nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	l := New(f, opts)
	l.c = f
	return l, nil
}

// New returns an audit log writing to w. opts may be nil.
func New(w io.Writer, opts *Options) *Log {
	l := &Log{w: w}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.MaxArguments <= 0 {
		l.opts.MaxArguments = DefaultMaxArguments
	}
	l.log = l.opts.Logger
	l.args.Store(l.opts.Arguments)
	if l.log == nil {
		l.log = hclog.NewNullLogger()
	}
	return l
}

// Close closes the file Open opened.
func (l *Log) Close() error {
	var err error
	l.once.Do(func() {
		if l.c != nil {
			l.mu.Lock()
			err = l.c.Close()
			l.mu.Unlock()
		}
	})
	return err
}

// line is one audit line; its field order is the line's.
type line struct {
	Time           string          `json:"time"`
	Client         string          `json:"client,omitempty"`
	Session        string          `json:"session,omitempty"`
	Stateless      bool            `json:"stateless,omitempty"`
	Remote         string          `json:"remote,omitempty"`
	Caller         *caller         `json:"caller,omitempty"`
	Tool           string          `json:"tool"`
	Provider       string          `json:"provider,omitempty"`
	Outcome        mcp.Outcome     `json:"outcome"`
	DurationMS     float64         `json:"duration_ms"`
	ArgumentsBytes int             `json:"arguments_bytes"`
	ResultBytes    int             `json:"result_bytes"`
	TraceID        string          `json:"trace_id,omitempty"`
	Task           bool            `json:"task,omitempty"`
	Arguments      json.RawMessage `json:"arguments,omitempty"`
	Truncated      bool            `json:"arguments_truncated,omitempty"`
}

// caller is a line's caller: who the client acts for.
type caller struct {
	Subject string `json:"sub,omitempty"`
	Client  string `json:"client,omitempty"`
}

// CallEnd writes e's line: it is host/mcp's Options.OnCallEnd.
func (l *Log) CallEnd(e *mcp.CallEnd) {
	ln := line{Time: e.Start.UTC().Format(time.RFC3339Nano), Client: e.Client, Session: e.Peer.SessionID,
		Stateless: e.Stateless, Remote: e.Peer.Remote, Tool: e.Tool, Provider: e.Provider, Outcome: e.Outcome,
		DurationMS: float64(e.Duration.Microseconds()) / 1000, ArgumentsBytes: len(e.Arguments), ResultBytes: e.ResultSize,
		TraceID: e.TraceID, Task: e.Task}
	if c := e.Peer.Caller; c.Subject != "" || c.ClientID != "" {
		ln.Caller = &caller{Subject: c.Subject, Client: c.ClientID}
	}
	if l.args.Load() && len(e.Arguments) > 0 {
		ln.Arguments, ln.Truncated = l.arguments(e.Arguments)
	}
	b, err := json.Marshal(&ln)
	if err != nil { // cannot happen: arguments are checked JSON, the rest strings and numbers
		l.log.Error("audit line not written", "tool", e.Tool, "error", err)
		return
	}
	l.write(b)
}

// write writes one line, counting the lines a failing writer loses.
func (l *Log) write(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(append(l.buf[:0], b...), '\n')
	l.recent.add(string(b))
	if _, err := l.w.Write(l.buf); err != nil {
		if l.lost == 0 {
			l.log.Error("audit log write failed: lines are being lost", "error", err)
		}
		l.lost++
		return
	}
	if l.lost > 0 {
		l.log.Warn("audit log written again", "lines_lost", l.lost)
		l.lost = 0
	}
}

// TrustChange is a plugin's change of trust state (host/trust's Change,
// which plughost serve passes on: this package does not import it).
type TrustChange struct {
	Time   time.Time
	Plugin string
	// Mode and State are the plugin's trust mode and new state; From its
	// previous state, "" at its first check.
	Mode, State, From string
	// Digest is the plugin file's; Signer the principal of a valid
	// signature; Reason why a quarantined plugin may not run.
	Digest, Signer, Reason string
}

// trustLine is the line of a trust state change.
type trustLine struct {
	Time   string `json:"time"`
	Event  string `json:"event"` // "trust"
	Plugin string `json:"plugin"`
	Mode   string `json:"mode"`
	State  string `json:"state"`
	From   string `json:"from,omitempty"`
	Digest string `json:"digest,omitempty"`
	Signer string `json:"signer,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Trust writes the line of a plugin's trust state change.
func (l *Log) Trust(c TrustChange) {
	b, err := json.Marshal(&trustLine{Time: c.Time.UTC().Format(time.RFC3339Nano), Event: "trust", Plugin: c.Plugin,
		Mode: c.Mode, State: c.State, From: c.From, Digest: c.Digest, Signer: c.Signer, Reason: c.Reason})
	if err != nil { // cannot happen: strings only
		l.log.Error("audit line not written", "plugin", c.Plugin, "error", err)
		return
	}
	l.write(b)
}

// arguments is what a line carries of args: them as they are, or their
// first MaxArguments bytes as a JSON string, and whether it was cut.
func (l *Log) arguments(args json.RawMessage) (json.RawMessage, bool) {
	if len(args) <= l.opts.MaxArguments && json.Valid(args) {
		return args, false
	}
	cut := strings.ToValidUTF8(string(args[:min(len(args), l.opts.MaxArguments)]), "")
	b, _ := json.Marshal(cut)
	return b, true
}
