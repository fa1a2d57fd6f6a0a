package mcp

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// listenRequest is a stateless subscriptions/listen of id naming uris.
func listenRequest(id int, uris []string) string {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[`)
	for i, u := range uris {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonrpc.AppendString(nil, u))
	}
	b.WriteString(`]},` + statelessMeta + `}}`)
	return b.String()
}

// TestListenManyURIsRefusedByCount: one listen naming 390,000 short URIs
// (the limit is 1000) is refused by its count before anything else is
// done with the list (issue 31, attack 14: refused after 277 s of CPU,
// deduplicating with a scan of the list kept so far before counting).
// The answer must come within the harness's wait (30 s), where a scan per
// URI took minutes. Not parallel, so that the CPU time it logs (0.4 s here,
// parsing included; -race multiplies it) is this request's; speed is not
// asserted.
func TestListenManyURIsRefusedByCount(t *testing.T) {
	c := newClient(t, clientOptions{server: Options{MaxMessageSize: 8 << 20}})
	uris := make([]string, 390_000)
	for i := range uris {
		uris[i] = "u:" + strconv.Itoa(i)
	}
	msg := listenRequest(1, uris)
	before := cpuTime(t)
	c.write(msg)
	line := c.next()
	used := cpuTime(t) - before
	if !strings.Contains(line, `"code":-32602`) || !strings.Contains(line, "names 390000 URIs; one stream may name at most 1000") {
		t.Fatalf("390,000 URIs: %.200s, want -32602 naming the count and the limit", line)
	}
	if n := c.cat.Subscriptions(); n != 0 {
		t.Errorf("%d subscriptions made for a refused listen", n)
	}
	t.Logf("390,000 URIs (%d bytes) refused in %v of CPU", len(msg), used)
}

// TestListenBytesBounded: one stream may name at most MaxListenBytes of
// URIs (1000 URIs of 3.9 KB each, the attack, are refused naming the
// limit, though within the count), duplicates counted once; all streams
// together at most ListenBudget, released when a stream ends (issue 31,
// attack 13: 100 streams of 1000 such URIs held 895 MB).
func TestListenBytesBounded(t *testing.T) {
	t.Parallel()
	big := make([]string, 1000)
	for i := range big {
		big[i] = "file:///" + strings.Repeat("x", 3900) + strconv.Itoa(i)
	}
	t.Run("per stream", func(t *testing.T) {
		t.Parallel()
		c := newClient(t, clientOptions{server: Options{MaxMessageSize: 8 << 20}})
		line := c.roundtrip(listenRequest(1, big))
		if len(line) != 1 || !strings.Contains(line[0], `"code":-32602`) ||
			!strings.Contains(line[0], "one stream may name at most 262144 (limits { listen_bytes })") {
			t.Fatalf("1000 URIs of 3.9 KB: %q, want -32602 naming listen_bytes", line)
		}
		// The same URI a thousand times is within the count and counts once.
		same := make([]string, 1000)
		for i := range same {
			same[i] = big[0]
		}
		c.write(listenRequest(2, same))
		if ack := c.next(); !strings.Contains(ack, "notifications/subscriptions/acknowledged") {
			t.Fatalf("one URI named 1000 times: %.300s, want acknowledged", ack)
		}
	})
	t.Run("all streams", func(t *testing.T) {
		t.Parallel()
		uri := "file:///a.txt" // 13 bytes
		c := newClient(t, clientOptions{server: Options{ListenBudget: 20}})
		c.write(listenRequest(1, []string{uri}))
		if ack := c.next(); !strings.Contains(ack, `"resourceSubscriptions":["file:///a.txt"]`) {
			t.Fatalf("first stream: %s, want acknowledged", ack)
		}
		line := c.roundtrip(listenRequest(2, []string{"file:///b.txt"}))
		if len(line) != 1 || !strings.Contains(line[0], `"id":2,"error":{"code":-32602`) ||
			!strings.Contains(line[0], "13 more bytes: 20 bytes of URIs and task ids are held") ||
			!strings.Contains(line[0], "limits { listen_budget }") {
			t.Fatalf("second stream past the budget: %q, want -32602 naming listen_budget", line)
		}
		c.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		c.settle()
		c.write(listenRequest(3, []string{"file:///b.txt"}))
		if ack := c.next(); !strings.Contains(ack, `"resourceSubscriptions":["file:///b.txt"]`) {
			t.Fatalf("after the first stream ended: %s, want acknowledged", ack)
		}
	})
}

// FuzzListenParams: whatever notifications a client sends, decode and
// bound never panic, keep each URI and task id once in the order first
// named, count their bytes, and refuse a list past the count as sent.
func FuzzListenParams(f *testing.F) {
	f.Add(`{"resourceSubscriptions":["a","b","a"],"taskIds":["t","t"]}`, 2, int64(10))
	f.Add(`{"toolsListChanged":true,"resourceSubscriptions":[]}`, 0, int64(0))
	f.Add(`{"resourceSubscriptions":["\u0000","é","e\u0301"]}`, 3, int64(4))
	f.Fuzz(func(t *testing.T, notifications string, max int, maxBytes int64) {
		raw := []byte(`{"notifications":` + notifications + `}`)
		if !json.Valid(raw) {
			return // the message decoder refuses it before params are decoded
		}
		p, err := listenParams{}.decode("", raw)
		if err != nil {
			return
		}
		sentURIs, sentTasks := len(p.uris), len(p.tasks)
		if err := p.bound(max, maxBytes); err != nil {
			if sentURIs <= max && sentTasks <= max && p.bytes <= maxBytes {
				t.Fatalf("bound(%d, %d) refused %s within both: %s", max, maxBytes, notifications, err.Message)
			}
			return
		}
		if sentURIs > max || sentTasks > max || p.bytes > maxBytes {
			t.Fatalf("bound(%d, %d) let %d URIs, %d tasks, %d bytes through", max, maxBytes, sentURIs, sentTasks, p.bytes)
		}
		var n int64
		for _, list := range [][]string{p.uris, p.tasks} {
			seen := map[string]bool{}
			for _, s := range list {
				if seen[s] {
					t.Fatalf("%q kept twice", s)
				}
				seen[s] = true
				n += int64(len(s))
			}
		}
		if n != p.bytes {
			t.Fatalf("bytes %d, the kept lists hold %d", p.bytes, n)
		}
	})
}
