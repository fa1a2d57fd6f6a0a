package streamable

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

const pingMsg = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

// openSession initializes a session at path and returns its id, without
// the checks of httpServer.initialize (a flood needs none).
func (hs *httpServer) openSession(path string) string {
	hs.t.Helper()
	status, h, body := hs.roundtrip(req{"POST", path, postHeaders(""), mcptest.InitMsg("2025-11-25")})
	if status != 200 {
		hs.t.Fatalf("initialize at %s: %d %s", path, status, body)
	}
	return h.Get("Mcp-Session-Id")
}

// openStream opens the session's own GET stream, which makes it busy; the
// response is closed when the test ends.
func (hs *httpServer) openStream(path, sid string) {
	hs.t.Helper()
	resp := hs.do(req{"GET", path, map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": sid}, ""})
	if resp.StatusCode != 200 {
		hs.t.Fatalf("GET stream of %s: %d", sid[:8], resp.StatusCode)
	}
	hs.t.Cleanup(func() { resp.Body.Close() })
}

// TestHTTPSessionFlood: one client opens the default MaxSessions (1000)
// sessions and leaves them idle; another client still initializes (the
// least recently used idle session is evicted), the evicted session's next
// request gets 404 saying why, and the flood's newest session still works.
func TestHTTPSessionFlood(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = hs.openSession("/mcp")
	}
	other := hs.openSession("/mcp")
	if status, _, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(other), pingMsg}); status != 200 {
		t.Errorf("ping of the session opened past the flood: %d %s", status, body)
	}
	status, _, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(ids[0]), pingMsg})
	if status != 404 || !strings.Contains(body, "limits { sessions }") || !strings.Contains(body, "initialize") {
		t.Errorf("ping of the flood's first (evicted) session: %d %s, want 404 naming limits { sessions } and initialize", status, body)
	}
	if status, _, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(ids[999]), pingMsg}); status != 200 {
		t.Errorf("ping of the flood's newest session: %d %s", status, body)
	}
}

// TestHTTPSessionsAllBusy: when every open session is busy (here each
// has its GET stream open), none is evicted and initialize gets 503
// naming the limit; an HTTP+SSE session counts too.
func TestHTTPSessionsAllBusy(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{MaxSessions: 2})
	a := hs.openSession("/mcp")
	hs.openStream("/mcp", a)
	legacy := hs.do(req{"GET", PathSSE, map[string]string{"Accept": "text/event-stream"}, ""})
	t.Cleanup(func() { legacy.Body.Close() })
	if legacy.StatusCode != 200 {
		t.Fatalf("GET %s: %d", PathSSE, legacy.StatusCode)
	}
	newSSEReader(t, legacy).nextWithin(t, 10*time.Second) // the endpoint event: registered
	status, _, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(""), mcptest.InitMsg("2025-11-25")})
	if status != 503 || !strings.Contains(body, "limits { sessions }") || !strings.Contains(body, "busy") {
		t.Errorf("initialize with 2 busy sessions and MaxSessions 2: %d %s, want 503 naming limits { sessions }", status, body)
	}
	if status, _, body := hs.roundtrip(req{"POST", "/mcp", postHeaders(a), pingMsg}); status != 200 {
		t.Errorf("ping of the busy session: %d %s", status, body)
	}
}

// TestHTTPEndpointsShareLimits: MaxSessions bounds the endpoints' sessions
// together: a busy session at /mcp fills a table of one (503 at /search),
// an idle one is evicted for a session at /search.
func TestHTTPEndpointsShareLimits(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{MaxSessions: 1, Endpoints: map[string]*mcp.Server{"/search": searchServer(t)}})
	busy := hs.openSession("/mcp")
	hs.openStream("/mcp", busy)
	if status, _, body := hs.roundtrip(req{"POST", "/search", postHeaders(""), mcptest.InitMsg("2025-11-25")}); status != 503 {
		t.Errorf("initialize at /search with a busy session at /mcp and MaxSessions 1: %d %s, want 503", status, body)
	}

	hs2 := startHTTP(t, &Options{MaxSessions: 1, Endpoints: map[string]*mcp.Server{"/search": searchServer(t)}})
	idle := hs2.openSession("/mcp")
	hs2.openSession("/search")
	if status, _, body := hs2.roundtrip(req{"POST", "/mcp", postHeaders(idle), pingMsg}); status != 404 || !strings.Contains(body, "limits { sessions }") {
		t.Errorf("ping of the idle /mcp session after a session opened at /search: %d %s, want 404 (evicted)", status, body)
	}
}

// TestReplayBudget: the sessions' replay rings together stay within
// ReplayBudget (plus one event per session); each session keeps its
// newest event; an ended session gives its bytes back.
func TestReplayBudget(t *testing.T) {
	t.Parallel()
	var total atomic.Int64
	frame := make([]byte, 100)
	rings := make([]*ring, 4)
	for i := range rings {
		rings[i] = &ring{ev: make([]event, 256), maxBytes: 1 << 20, total: &total, budget: 1000}
	}
	for seq := range uint64(50) {
		for _, r := range rings {
			r.push(event{0, seq + 1, frame})
		}
	}
	if got := total.Load(); got > 1000+4*100 {
		t.Errorf("4 rings of 50 events of 100 bytes under a budget of 1000: %d bytes kept, want at most 1400", got)
	}
	for i, r := range rings {
		if r.n == 0 || r.lastSeq() != 50 {
			t.Errorf("ring %d keeps %d events, the newest %d; want the newest, 50", i, r.n, r.lastSeq())
		}
		if _, lost := r.since(0, 0); !lost {
			t.Errorf("ring %d: a client resuming from the start is not told events were lost", i)
		}
	}
	for _, r := range rings {
		r.release()
	}
	if got := total.Load(); got != 0 {
		t.Errorf("every ring released: %d bytes counted, want 0", got)
	}
}
