package streamable

import (
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recorder is a Meter that keeps what it learns.
type recorder struct {
	mu       sync.Mutex
	sessions map[string]int
	limits   map[string]int
}

func (r *recorder) Sessions(transport string, delta int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions[transport] += delta
}
func (r *recorder) Streams(int) {}
func (r *recorder) LimitHit(limit string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limits[limit]++
}

// The Meter learns of sessions opened and ended and of the session limit
// hit (a session evicted to admit another); /metrics serves Options.Metrics behind the token, and is not found
// without it.
func TestMeterAndMetricsPath(t *testing.T) {
	t.Parallel()
	rec := &recorder{sessions: map[string]int{}, limits: map[string]int{}}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("plughost_up 1\n")) })
	hs := startHTTP(t, &Options{Meter: rec, Metrics: metrics, MaxSessions: 1, Token: "tok"})
	auth := func(h map[string]string) map[string]string { h["Authorization"] = "Bearer tok"; return h }

	open := func() string {
		status, h, body := hs.roundtrip(req{"POST", "/mcp", auth(postHeaders("")), `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`})
		if status != 200 {
			t.Fatalf("initialize: %d %s", status, body)
		}
		return h.Get("Mcp-Session-Id")
	}
	open()
	sid := open() // MaxSessions 1: the first, idle, is evicted

	rec.mu.Lock()
	if n := rec.sessions[TransportStreamable]; n != 1 {
		t.Errorf("sessions after one opened: %d, want 1", n)
	}
	rec.mu.Unlock()
	if status, _, body := hs.roundtrip(req{"GET", "/metrics", nil, ""}); status != 401 {
		t.Errorf("GET /metrics without the token: %d %s, want 401", status, body)
	}
	if status, _, body := hs.roundtrip(req{"GET", "/metrics", auth(map[string]string{}), ""}); status != 200 || body != "plughost_up 1\n" {
		t.Errorf("GET /metrics: %d %q, want the handler's answer", status, body)
	}
	if status, _, _ := hs.roundtrip(req{"POST", "/metrics", auth(map[string]string{}), ""}); status != 405 {
		t.Errorf("POST /metrics: %d, want 405", status)
	}
	if status, _, _ := hs.roundtrip(req{"DELETE", "/mcp", auth(postHeaders(sid)), ""}); status != 200 && status != 204 {
		t.Errorf("DELETE: %d", status)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if diff := cmp.Diff(map[string]int{TransportStreamable: 0}, rec.sessions); diff != "" {
		t.Errorf("sessions after one opened and ended (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{LimitSessions: 1}, rec.limits); diff != "" {
		t.Errorf("limits hit (-want +got):\n%s", diff)
	}
}

func TestNoMetricsPath(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, nil)
	if status, _, _ := hs.roundtrip(req{"GET", "/metrics", nil, ""}); status != 404 {
		t.Errorf("GET /metrics without Options.Metrics: %d, want 404", status)
	}
}
