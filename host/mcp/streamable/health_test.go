package streamable

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// TestHealthEndpoints: /healthz and /readyz answer without the token that
// /mcp needs, only to GET and HEAD, and behind the same Host and Origin
// guards as every other path.
func TestHealthEndpoints(t *testing.T) {
	t.Parallel()
	hs := startHTTP(t, &Options{Token: "s3cret", AllowedOrigins: []string{"http://localhost:6274"}})
	tests := map[string]struct {
		r      req
		status int
		body   string // the whole body
		allow  string // the Allow header
	}{
		"GET healthz without token":       {req{"GET", "/healthz", nil, ""}, 200, "ok\n", ""},
		"GET readyz without token":        {req{"GET", "/readyz", nil, ""}, 200, "ready\n", ""},
		"HEAD healthz has no body":        {req{"HEAD", "/healthz", nil, ""}, 200, "", ""},
		"HEAD readyz has no body":         {req{"HEAD", "/readyz", nil, ""}, 200, "", ""},
		"a wrong token does not matter":   {req{"GET", "/readyz", map[string]string{"Authorization": "Bearer guess"}, ""}, 200, "ready\n", ""},
		"POST healthz is 405":             {req{"POST", "/healthz", postHeaders(""), "{}"}, 405, "method not allowed: use GET or HEAD\n", "GET, HEAD"},
		"DELETE readyz is 405":            {req{"DELETE", "/readyz", nil, ""}, 405, "method not allowed: use GET or HEAD\n", "GET, HEAD"},
		"foreign Host is 403":             {req{"GET", "/healthz", map[string]string{"Host": "evil.example:8080"}, ""}, 403, "", ""},
		"foreign Origin is 403":           {req{"GET", "/readyz", map[string]string{"Origin": "http://evil.example"}, ""}, 403, "", ""},
		"allowed Origin passes":           {req{"GET", "/readyz", map[string]string{"Origin": "http://localhost:6274"}, ""}, 200, "ready\n", ""},
		"localhost Host passes":           {req{"GET", "/healthz", map[string]string{"Host": "localhost:1"}, ""}, 200, "ok\n", ""},
		"a path beneath is not health":    {req{"GET", "/healthz/x", nil, ""}, 404, "", ""},
		"the MCP endpoint still needs it": {req{"POST", "/mcp", postHeaders(""), mcptest.InitMsg("2025-11-25")}, 401, "", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			status, h, body := hs.roundtrip(tc.r)
			if status != tc.status {
				t.Fatalf("%s %s = %d %q, want %d", tc.r.method, tc.r.path, status, body, tc.status)
			}
			if tc.status == 200 || tc.status == 405 {
				if body != tc.body {
					t.Errorf("body = %q, want %q", body, tc.body)
				}
				if ct := h.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
					t.Errorf("Content-Type = %q", ct)
				}
				if cc := h.Get("Cache-Control"); cc != "no-store" {
					t.Errorf("Cache-Control = %q, want no-store", cc)
				}
			}
			if got := h.Get("Allow"); got != tc.allow {
				t.Errorf("Allow = %q, want %q", got, tc.allow)
			}
		})
	}
}

// TestReadyzFollowsReady: /readyz answers 503 with Options.Ready's reason,
// on one line, until Ready says the host is ready; /healthz answers 200
// all along.
func TestReadyzFollowsReady(t *testing.T) {
	t.Parallel()
	var notReady atomic.Pointer[error]
	loading := errors.New("the plugins found at start are still loading\n(2 of 3)")
	notReady.Store(&loading)
	calls := atomic.Int32{}
	hs := startHTTP(t, &Options{Ready: func() error {
		calls.Add(1)
		if p := notReady.Load(); p != nil {
			return *p
		}
		return nil
	}})
	check := func(path string, status int, body string) {
		t.Helper()
		if s, _, b := hs.roundtrip(req{"GET", path, nil, ""}); s != status || b != body {
			t.Errorf("GET %s = %d %q, want %d %q", path, s, b, status, body)
		}
	}
	check("/readyz", 503, "not ready: the plugins found at start are still loading (2 of 3)\n")
	check("/healthz", 200, "ok\n")
	if n := calls.Load(); n != 1 {
		t.Errorf("Ready was called %d times for one /readyz and one /healthz, want once", n)
	}
	notReady.Store(nil)
	check("/readyz", 200, "ready\n")
	check("/healthz", 200, "ok\n")
}

// TestReadyzDuringShutdown: once ctx ends, /readyz answers 503 while the
// server goes on serving for DrainDelay (liveness and MCP included), then
// shuts down.
func TestReadyzDuringShutdown(t *testing.T) {
	t.Parallel()
	const delay = 3 * time.Second // the checks below take milliseconds
	hs := startHTTP(t, &Options{DrainDelay: delay})
	if s, _, b := hs.roundtrip(req{"GET", "/readyz", nil, ""}); s != 200 {
		t.Fatalf("GET /readyz before shutdown = %d %q, want 200", s, b)
	}
	start := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- hs.stop() }()
	hs.logs.await(t, "draining")
	if s, _, b := hs.roundtrip(req{"GET", "/readyz", nil, ""}); s != 503 || b != "not ready: shutting down\n" {
		t.Errorf("GET /readyz while draining = %d %q, want 503 %q", s, b, "not ready: shutting down\n")
	}
	if s, _, b := hs.roundtrip(req{"GET", "/healthz", nil, ""}); s != 200 || b != "ok\n" {
		t.Errorf("GET /healthz while draining = %d %q, want 200 ok", s, b)
	}
	if s, h, b := hs.roundtrip(req{"POST", "/mcp", postHeaders(""), mcptest.InitMsg("2025-11-25")}); s != 200 || h.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize while draining = %d %q, want 200 and a session", s, b)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) during the drain delay", err)
	default:
	}
	if err := <-stopped; err != nil {
		t.Errorf("Serve = %v", err)
	}
	if elapsed := time.Since(start); elapsed < delay {
		t.Errorf("Serve returned %v after ctx ended, before the drain delay of %v", elapsed, delay)
	}
	if _, err := http.Get(hs.url + "/healthz"); err == nil {
		t.Error("the server still accepts connections after shutting down")
	}
}

// TestShutdownWaitsForFinish: the graceful shutdown hands Finish the
// grace period (a context with its deadline) and returns only once
// Finish has: work beyond the requests (the host's tasks) ends in the
// same grace.
func TestShutdownWaitsForFinish(t *testing.T) {
	t.Parallel()
	called, release := make(chan bool, 1), make(chan struct{})
	var finished atomic.Bool
	hs := startHTTP(t, &Options{ShutdownTimeout: time.Minute, Finish: func(grace context.Context) {
		_, bounded := grace.Deadline()
		called <- bounded
		<-release
		finished.Store(true)
	}})
	stopped := make(chan error, 1)
	go func() { stopped <- hs.stop() }()
	select {
	case bounded := <-called:
		if !bounded {
			t.Error("Finish's context has no deadline, want the grace period's")
		}
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("the shutdown never called Finish")
	}
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) while Finish ran", err)
	default:
	}
	close(release)
	if err := <-stopped; err != nil || !finished.Load() {
		t.Errorf("Serve = %v, Finish returned first: %v; want nil, true", err, finished.Load())
	}
}
