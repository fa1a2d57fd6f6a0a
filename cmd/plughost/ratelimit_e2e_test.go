package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/internal/redistest"
)

// The rate limit tests refill their buckets so slowly (one token per 100
// s) that what passes is the burst, exactly, however long the test takes.

// rateAnswer is one POST's answer: its status, Retry-After and JSON-RPC
// message.
type rateAnswer struct {
	status     int
	retryAfter string
	result     json.RawMessage
	err        *struct {
		Code    int
		Message string
		Data    struct {
			Rule, Limit, Tool string
			RetryAfterMs      int64
		}
	}
}

// ratePost POSTs body (a JSON-RPC request) to url with headers, and reads
// the answer, a JSON body or an SSE stream's last message.
func ratePost(t *testing.T, url, body string, headers map[string]string) (rateAnswer, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for _, line := range bytes.Split(raw, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && len(d) > 0 {
				last = d
			}
		}
		raw = last
	}
	a := rateAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	if len(raw) > 0 {
		var msg struct {
			Result json.RawMessage
			Error  json.RawMessage
		}
		if err := json.Unmarshal(raw, &msg); err != nil {
			t.Fatalf("POST %s: HTTP %d %q: %v", body, resp.StatusCode, raw, err)
		}
		a.result = msg.Result
		if msg.Error != nil {
			a.err = &struct {
				Code    int
				Message string
				Data    struct {
					Rule, Limit, Tool string
					RetryAfterMs      int64
				}
			}{}
			json.Unmarshal(msg.Error, a.err)
		}
	}
	return a, resp.Header
}

// rateSession is a 2025-11-25 Streamable HTTP session spoken by hand, so
// that a test sees each answer's status and headers.
type rateSession struct {
	t       *testing.T
	url     string
	headers map[string]string
	id      int
}

func openRateSession(t *testing.T, url, token string) *rateSession {
	t.Helper()
	s := &rateSession{t: t, url: url, headers: map[string]string{}}
	if token != "" {
		s.headers["Authorization"] = "Bearer " + token
	}
	a, h := ratePost(t, url, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"rate-test","version":"1"}}}`, s.headers)
	if a.status != 200 || h.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: HTTP %d %+v", a.status, a.err)
	}
	s.headers["Mcp-Session-Id"] = h.Get("Mcp-Session-Id")
	s.headers["MCP-Protocol-Version"] = "2025-11-25"
	ratePost(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, s.headers)
	return s
}

// call calls tool with args (a JSON object).
func (s *rateSession) call(tool, args string) rateAnswer {
	s.t.Helper()
	s.id++
	a, _ := ratePost(s.t, s.url, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, s.id, tool, args), s.headers)
	return a
}

// wantPass fails unless a is a result.
func wantPass(t *testing.T, who string, a rateAnswer) {
	t.Helper()
	if a.status != 200 || a.err != nil || a.result == nil {
		t.Errorf("%s: HTTP %d %+v, want a result", who, a.status, a.err)
	}
}

// wantLimited fails unless a is a refusal over rule's limit (of tool), as
// HTTP 429 with Retry-After (whole seconds, rounded up) when status is
// 429, else as the JSON-RPC error alone.
func wantLimited(t *testing.T, who string, a rateAnswer, status int, rule, limit, tool string) {
	t.Helper()
	if a.status != status || a.err == nil || a.err.Code != -32029 || a.err.Data.Rule != rule || a.err.Data.Limit != limit || a.err.Data.Tool != tool {
		t.Errorf("%s: HTTP %d %+v, want %d and -32029 naming rule %q, limit %q, tool %q", who, a.status, a.err, status, rule, limit, tool)
		return
	}
	if !strings.Contains(a.err.Message, "retry after") || a.err.Data.RetryAfterMs <= 0 {
		t.Errorf("%s: %q, retryAfterMs %d: want when to retry", who, a.err.Message, a.err.Data.RetryAfterMs)
	}
	if status == http.StatusTooManyRequests {
		if want := fmt.Sprint((a.err.Data.RetryAfterMs + 999) / 1000); a.retryAfter != want {
			t.Errorf("%s: Retry-After %q, want %s (retryAfterMs %d rounded up)", who, a.retryAfter, want, a.err.Data.RetryAfterMs)
		}
	}
}

// TestRateLimitsPerCaller: two OAuth callers of one serve --http, each
// with sessions of its own. Alice (the caller block: bursts of 5, sleep
// once) is refused with 429 and Retry-After once over her limits, her
// tool limit first (which takes nothing from her own), while bob's calls
// pass; bob, whom the rule "readers" matches, has its burst of 2, shared
// by his two sessions. The metrics count the refusals by rule and limit,
// and the audit log names the caller.
func TestRateLimitsPerCaller(t *testing.T) {
	t.Parallel()
	as := startOIDCProvider(t)
	const resource = "https://mcp.example.com/mcp"
	cfg := as.AuthBlock(resource, "mcp:tools") + `
limits {
  caller {
    rate  = 0.01
    burst = 5
    tool "sleep" {
      rate = 0.01
    }
  }
  rule "readers" {
    match = "!('writers' in caller.claims.groups)"
    burst = 2
  }
}
`
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	h := startHTTPHostWith(t, []string{"--config", writeConfig(t, cfg), "--audit-log", auditPath, "--metrics-listen", "127.0.0.1:0"}, "echo")
	url := h.base + "/mcp"
	alice := openRateSession(t, url, as.Token(t, oidcAlice, resource, "mcp:tools"))
	bobToken := as.Token(t, oidcBob, resource, "mcp:tools")
	bob, bob2 := openRateSession(t, url, bobToken), openRateSession(t, url, bobToken)

	wantPass(t, "alice's first sleep", alice.call("sleep", `{"ms":1}`))
	wantLimited(t, "alice's second sleep", alice.call("sleep", `{"ms":1}`), 429, "caller", "tool_rate", "sleep")
	for i := range 4 { // the refused sleep took no token of hers: 4 are left
		wantPass(t, fmt.Sprintf("alice's echo %d", i+1), alice.call("echo", `{"text":"hi"}`))
	}
	wantLimited(t, "alice's fifth echo", alice.call("echo", `{"text":"hi"}`), 429, "caller", "rate", "")

	// bob is not limited by alice's use; his two sessions share his burst.
	wantPass(t, "bob's first echo", bob.call("echo", `{"text":"hi"}`))
	wantPass(t, "bob's second echo, in another session", bob2.call("echo", `{"text":"hi"}`))
	wantLimited(t, "bob's third echo", bob.call("echo", `{"text":"hi"}`), 429, "readers", "rate", "")
	// A list is not counted.
	if a, _ := ratePost(t, url, `{"jsonrpc":"2.0","id":99,"method":"tools/list"}`, bob.headers); a.status != 200 || a.err != nil {
		t.Errorf("bob's tools/list: HTTP %d %+v", a.status, a.err)
	}

	m := metricsURL.FindStringSubmatch(h.stderr.String())
	if m == nil {
		t.Fatal("no metrics URL in the log")
	}
	fams := scrape(t, http.DefaultClient, m[1])
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"rule": "caller", "limit": "tool_rate"}, 1},
		{map[string]string{"rule": "caller", "limit": "rate"}, 1},
		{map[string]string{"rule": "readers", "limit": "rate"}, 1},
	} {
		got := -1.0
		for _, mt := range fams["plughost_rate_limited_total"].GetMetric() {
			if hasLabels(mt, c.labels) {
				got = mt.GetCounter().GetValue()
			}
			for _, l := range mt.GetLabel() {
				if v := l.GetValue(); v == oidcAlice || v == oidcBob {
					t.Errorf("a metric label names the caller: %v", mt)
				}
			}
		}
		if got != c.want {
			t.Errorf("plughost_rate_limited_total%v = %v, want %v", c.labels, got, c.want)
		}
	}

	h.stop() // the audit log is complete once serve has exited
	raw, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var limited []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var l struct {
			Event, Method, Tool, Rule, Limit string
			Caller                           struct{ Sub string }
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Event == "rate_limited" {
			limited = append(limited, l.Caller.Sub+" "+l.Method+" "+l.Tool+" "+l.Rule+" "+l.Limit)
		}
	}
	want := []string{"alice tools/call sleep caller tool_rate", "alice tools/call echo caller rate", "bob tools/call echo readers rate"}
	if strings.Join(limited, "\n") != strings.Join(want, "\n") {
		t.Errorf("the audit log's rate_limited lines:\n%s\nwant:\n%s", strings.Join(limited, "\n"), strings.Join(want, "\n"))
	}
}

// TestRateLimitsStdioAndStateless: over stdio (the caller is the local
// user) a call over the limit is the JSON-RPC error -32029 naming the
// limit; a 2026-07-28 stateless request over HTTP gets the same error,
// with 429 and Retry-After, as a session's would; and calls_per_day
// counts calls, not reads of lists.
func TestRateLimitsStdioAndStateless(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, `
limits {
  caller {
    rate          = 0.01
    burst         = 3
    calls_per_day = 2
  }
}
`)
	stdio := startTestHostWith(t, []string{"--config", cfg}, "echo")
	stdio.awaitTools("echo", "sleep")
	for range 2 {
		if res := stdio.call("echo", map[string]any{"text": "hi"}); res.IsError {
			t.Fatalf("echo over stdio: %s", text(res))
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := stdio.session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32029 || !strings.Contains(werr.Message, "allows 2 tool calls per day") {
		t.Fatalf("the third call over stdio: %v, want -32029 naming calls_per_day", err)
	}
	var data struct{ Rule, Limit string }
	if json.Unmarshal(werr.Data, &data); data.Rule != "caller" || data.Limit != "calls_per_day" {
		t.Errorf("the error's data %s, want the caller rule's calls_per_day", werr.Data)
	}

	h := startHTTPHostWith(t, []string{"--config", cfg}, "echo")
	url := h.base + "/mcp"
	wantPass(t, "the first stateless call", statelessEcho(t, url, 1))
	wantPass(t, "the second stateless call", statelessEcho(t, url, 2))
	wantLimited(t, "the third stateless call", statelessEcho(t, url, 3), 429, "caller", "calls_per_day", "")
}

// statelessEcho calls echo with a stateless (2026-07-28) request.
func statelessEcho(t *testing.T, url string, id int) rateAnswer {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id)
	a, _ := ratePost(t, url, body, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
	return a
}

// TestRateLimitsAcrossReplicas: two replicas sharing the Redis of their
// tasks enforce one limit together: of stateless calls sent to each in
// turn, the burst passes in all, not a burst on each.
func TestRateLimitsAcrossReplicas(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	key := strings.Repeat("k", 40)
	lb := startReplicasWith(t, key, key, fmt.Sprintf("tasks {\n  redis {\n    address = %q\n  }\n}\n", rs.Socket)+
		"limits {\n  caller {\n    rate  = 0.01\n    burst = 3\n  }\n}\n")
	passed := 0
	for i := range 8 {
		a := statelessEcho(t, lb.replicas[i%2].url, i+1)
		switch {
		case a.status == 200 && a.err == nil:
			passed++
		default:
			wantLimited(t, fmt.Sprintf("call %d, on replica %d", i+1, i%2), a, 429, "caller", "rate", "")
		}
	}
	if passed != 3 {
		t.Errorf("%d of 8 calls across two replicas passed, want the one burst, 3", passed)
	}
}
