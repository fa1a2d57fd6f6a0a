package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestServeHTTPProbes: serve --http answers /readyz 503 while the plugins
// found at start load and 200 once they have, /healthz 200 throughout;
// on SIGTERM with --drain-delay, /readyz answers 503 while the server
// still serves, then plughost exits cleanly.
func TestServeHTTPProbes(t *testing.T) {
	t.Parallel()
	const delay = 3 * time.Second
	dir := t.TempDir()
	copyPlugin(t, "echo", dir, "echo")
	stderr := newLineBuffer()
	cmd := exec.Command(bin.plughost, "serve", "--http", "127.0.0.1:0", "--plugins", dir, "--workspace", t.TempDir(),
		"--drain-delay", delay.String())
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "PLUGHOST_TOKEN=s3cret")
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("plughost stderr:\n%s", stderr)
		}
	})
	stderr.await(t, "serving MCP over Streamable HTTP")
	m := listenURL.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no URL in the log:\n%s", stderr)
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(m[1] + path) // no token: the probes need none
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		status, body := get("/readyz")
		if status == 200 {
			if body != "ready\n" {
				t.Errorf("GET /readyz = 200 %q, want %q", body, "ready\n")
			}
			break
		}
		if status != 503 || body != "not ready: the plugins found at start are still loading\n" {
			t.Fatalf("GET /readyz while loading = %d %q", status, body)
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz never answered 200")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, body := get("/healthz"); status != 200 || body != "ok\n" {
		t.Errorf("GET /healthz = %d %q, want 200 ok", status, body)
	}

	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	stderr.await(t, "draining")
	if status, body := get("/readyz"); status != 503 || body != "not ready: shutting down\n" {
		t.Errorf("GET /readyz after SIGTERM = %d %q, want 503 shutting down", status, body)
	}
	if status, body := get("/healthz"); status != 200 {
		t.Errorf("GET /healthz after SIGTERM = %d %q, want 200", status, body)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("plughost exited with %v", err)
		}
		exited <- err // for Cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("plughost did not exit within 30s of SIGTERM")
	}
	if elapsed := time.Since(start); elapsed < delay {
		t.Errorf("plughost exited %v after SIGTERM, before --drain-delay %v", elapsed, delay)
	}
}
