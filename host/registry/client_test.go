package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// api serves the API v0.1 routes of a registry holding doc (a
// server.json), as the official registry answers them.
func api(t *testing.T, doc []byte) http.Handler {
	t.Helper()
	s, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	wrap := fmt.Sprintf(`{"server":%s,"_meta":{"io.modelcontextprotocol.registry/official":{"status":"active","isLatest":true}}}`, doc)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v0.1/servers/{name}/versions/{version}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != s.Name || r.PathValue("version") != "latest" && r.PathValue("version") != s.Version {
			http.Error(w, `{"title":"Not Found","status":404,"detail":"Server not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, wrap)
	})
	mux.HandleFunc("GET /v0.1/servers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(s.Name, r.URL.Query().Get("search")) {
			fmt.Fprint(w, `{"servers":[],"metadata":{"count":0}}`)
			return
		}
		fmt.Fprintf(w, `{"servers":[%s],"metadata":{"count":1}}`, wrap)
	})
	return mux
}

func memoryDoc(t *testing.T) []byte {
	b, err := os.ReadFile("testdata/memory.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestClientGetAndSearch(t *testing.T) {
	srv := httptest.NewServer(api(t, memoryDoc(t)))
	defer srv.Close()
	c := NewClient(srv.URL, 0)
	ctx := context.Background()
	for _, v := range []string{"", "latest", "1.0.0"} {
		e, err := c.Get(ctx, "io.example/memory", v)
		if err != nil || e.Server.Version != "1.0.0" || e.Status != "active" || !e.IsLatest {
			t.Fatalf("Get %q: %+v %v", v, e, err)
		}
	}
	if _, err := c.Get(ctx, "io.example/memory", "9.9.9"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown version: %v", err)
	}
	if _, err := c.Get(ctx, "io.example/nothing", ""); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "io.example/nothing@latest") {
		t.Fatalf("unknown name: %v", err)
	}
	found, err := c.Search(ctx, "memory", 0)
	if err != nil || len(found) != 1 || found[0].Server.Name != "io.example/memory" {
		t.Fatalf("search: %v %v", found, err)
	}
}

// Each bad registry is refused with its reason, in bounded time.
func TestClientBadRegistries(t *testing.T) {
	valid := fmt.Sprintf(`{"server":%s}`, memoryDoc(t))
	broken := strings.Replace(valid, `"name": "io.example/memory"`, `"name": "io.example/memory", "packages": 7, "x": 1`, 1)
	broken = strings.Replace(broken, `"packages": [`, `"unused": [`, 1)
	cases := []struct {
		name, want string
		handler    http.HandlerFunc
	}{
		{"garbage", "not an API v0.1 answer", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>hello</html>") }},
		{"huge", "an answer over 4194304 bytes", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"server":"`)
			w.Write([]byte(strings.Repeat("a", MaxResponse+10)))
		}},
		{"wrong shape", `no "server" member`, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"servers":[]}`) }},
		{"schema", "does not follow the server.json schema 2025-12-11: at /packages", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, broken) }},
		{"error status", "500 Internal Server Error", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }},
		{"another server", "with another server: io.example/memory@1.0.0", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, valid) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			name := "io.example/memory"
			if tc.name == "another server" {
				name = "io.example/other"
			}
			_, err := NewClient(srv.URL, 0).Get(context.Background(), name, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("down", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, err = NewClient("http://"+addr, 0).Get(context.Background(), "io.example/memory", "")
		if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "--registry") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("slow", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		start := time.Now()
		_, err := NewClient(srv.URL, 200*time.Millisecond).Get(context.Background(), "io.example/memory", "")
		if err == nil || !strings.Contains(err.Error(), "Timeout") {
			t.Fatalf("got %v", err)
		}
		t.Logf("a silent registry refused after %v (timeout 200ms)", time.Since(start))
	})
}

func TestOpen(t *testing.T) {
	for _, bad := range []string{"http://registry.example.com", "ftp://x", "https://"} {
		if _, err := Open(bad, 0); err == nil {
			t.Errorf("Open(%q) accepted", bad)
		}
	}
	for _, good := range []string{"https://registry.example.com", "http://127.0.0.1:8080", "http://localhost:1", ""} {
		if _, err := Open(good, 0); err != nil {
			t.Errorf("Open(%q): %v", good, err)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none"), 0); err == nil || !strings.Contains(err.Error(), "neither a URL nor a file") {
		t.Errorf("a missing path: %v", err)
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	doc := memoryDoc(t)
	v2 := strings.Replace(string(doc), `"version": "1.0.0"`, `"version": "1.10.0"`, 1)
	v3 := strings.Replace(string(doc), `"version": "1.0.0"`, `"version": "1.9.0"`, 1)
	os.WriteFile(filepath.Join(dir, "a.json"), doc, 0o644)
	os.WriteFile(filepath.Join(dir, "b.json"), []byte("["+v2+","+v3+"]"), 0o644)
	f := NewFiles(dir)
	ctx := context.Background()
	e, err := f.Get(ctx, "io.example/memory", "")
	if err != nil || e.Server.Version != "1.10.0" {
		t.Fatalf("latest: %+v %v", e, err)
	}
	if e, err := f.Get(ctx, "io.example/memory", "1.9.0"); err != nil || e.Server.Version != "1.9.0" {
		t.Fatalf("1.9.0: %v", err)
	}
	if _, err := f.Get(ctx, "io.example/memory", "2.0.0"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "it has 1.0.0, 1.10.0, 1.9.0") {
		t.Fatalf("2.0.0: %v", err)
	}
	if found, err := f.Search(ctx, "MEM", 0); err != nil || len(found) != 1 || found[0].Server.Version != "1.10.0" {
		t.Fatalf("search: %v %v", found, err)
	}
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(`{"name": "x"}`), 0o644)
	if _, err := f.Get(ctx, "io.example/memory", ""); err == nil || !strings.Contains(err.Error(), "c.json: document 1 does not follow") {
		t.Fatalf("a bad document: %v", err)
	}
}
