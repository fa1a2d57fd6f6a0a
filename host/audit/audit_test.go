package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/mcp"
)

// end is a call as host/mcp reports it.
func end(args string) *mcp.CallEnd {
	return &mcp.CallEnd{Tool: "echo", Provider: "echo", Outcome: mcp.OutcomeOK,
		Start: time.Date(2026, 7, 28, 10, 0, 0, 123456000, time.UTC), Duration: 1520 * time.Microsecond,
		Arguments: json.RawMessage(args), ResultSize: 52, Peer: mcp.Peer{SessionID: "s1", Remote: "127.0.0.1:5000"},
		Client: "claude-ai/0.1", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
}

func TestLine(t *testing.T) {
	t.Parallel()
	stateless := end(`{"text":"hi"}`)
	stateless.Peer.SessionID, stateless.Stateless = "", true
	withCaller := end(`{"text":"hi"}`)
	withCaller.Peer.Caller = mcp.Caller{Subject: "alice", ClientID: "claude-ai", Issuer: "https://auth.example.com", Scopes: []string{"mcp:tools"}}
	long := `{"text":"` + strings.Repeat("é", 40) + `"}`
	tests := map[string]struct {
		opts *Options
		e    *mcp.CallEnd
		want string
	}{
		"no arguments by default": {nil, end(`{"text":"hi"}`),
			`{"time":"2026-07-28T10:00:00.123456Z","client":"claude-ai/0.1","session":"s1","remote":"127.0.0.1:5000","tool":"echo","provider":"echo","outcome":"ok","duration_ms":1.52,"arguments_bytes":13,"result_bytes":52,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`},
		"arguments when asked": {&Options{Arguments: true}, end("{\"text\":\n \"hi\"}"),
			`{"time":"2026-07-28T10:00:00.123456Z","client":"claude-ai/0.1","session":"s1","remote":"127.0.0.1:5000","tool":"echo","provider":"echo","outcome":"ok","duration_ms":1.52,"arguments_bytes":15,"result_bytes":52,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","arguments":{"text":"hi"}}`},
		"arguments cut beyond the limit": {&Options{Arguments: true, MaxArguments: 16}, end(long),
			`{"time":"2026-07-28T10:00:00.123456Z","client":"claude-ai/0.1","session":"s1","remote":"127.0.0.1:5000","tool":"echo","provider":"echo","outcome":"ok","duration_ms":1.52,"arguments_bytes":91,"result_bytes":52,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","arguments":"{\"text\":\"ééé","arguments_truncated":true}`},
		"caller: subject and client": {nil, withCaller,
			`{"time":"2026-07-28T10:00:00.123456Z","client":"claude-ai/0.1","session":"s1","remote":"127.0.0.1:5000","caller":{"sub":"alice","client":"claude-ai"},"tool":"echo","provider":"echo","outcome":"ok","duration_ms":1.52,"arguments_bytes":13,"result_bytes":52,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`},
		"stateless says so": {nil, stateless,
			`{"time":"2026-07-28T10:00:00.123456Z","client":"claude-ai/0.1","stateless":true,"remote":"127.0.0.1:5000","tool":"echo","provider":"echo","outcome":"ok","duration_ms":1.52,"arguments_bytes":13,"result_bytes":52,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			New(&buf, tc.opts).CallEnd(tc.e)
			if diff := cmp.Diff(tc.want+"\n", buf.String()); diff != "" {
				t.Errorf("line (-want +got):\n%s", diff)
			}
		})
	}
}

// Open appends to the file, which only its owner may read.
func TestOpenAppends(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for range 2 {
		l, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.CallEnd(end(`{}`))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("%d lines after two opens, want 2:\n%s", n, b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing", "audit.jsonl"), nil); err == nil || !strings.Contains(err.Error(), "audit log") {
		t.Errorf("Open in a missing directory: %v, want an error naming the audit log", err)
	}
}

func TestTrustLine(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 9, 30, 0, 500000000, time.UTC)
	tests := map[string]struct {
		c    TrustChange
		want string
	}{
		"pending at the first check": {TrustChange{Time: at, Plugin: "echo", Mode: "pinned", State: "pending",
			Digest: "sha256:ab", Reason: "not approved (plughost approve echo)"},
			`{"time":"2026-11-26T09:30:00.5Z","event":"trust","plugin":"echo","mode":"pinned","state":"pending","digest":"sha256:ab","reason":"not approved (plughost approve echo)"}`},
		"approved": {TrustChange{Time: at, Plugin: "echo", From: "pending", Mode: "pinned",
			State: "approved", Digest: "sha256:ab"},
			`{"time":"2026-11-26T09:30:00.5Z","event":"trust","plugin":"echo","mode":"pinned","state":"approved","from":"pending","digest":"sha256:ab"}`},
		"signed": {TrustChange{Time: at, Plugin: "files", Mode: "signed", State: "signed",
			Digest: "sha256:cd", Signer: "alice@example.com"},
			`{"time":"2026-11-26T09:30:00.5Z","event":"trust","plugin":"files","mode":"signed","state":"signed","digest":"sha256:cd","signer":"alice@example.com"}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			New(&buf, nil).Trust(tc.c)
			if diff := cmp.Diff(tc.want+"\n", buf.String()); diff != "" {
				t.Errorf("line (-want +got):\n%s", diff)
			}
		})
	}
}
