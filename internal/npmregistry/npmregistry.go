// Package npmregistry runs a real npm registry for tests: Verdaccio, as
// pinned by package.json and package-lock.json beside this file (make
// test runs npm ci here), serving on a loopback port only the packages a
// test publishes to it, with no uplink to any other registry.
//
//	reg := npmregistry.Start(t, node)
//	reg.Publish(t, npmregistry.Package{Name: "@acme/hello-mcp", Version: "1.0.0", Files: files})
//	// npm_config_registry=reg.URL; reg.Requests() counts what it was asked
package npmregistry

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Registry is a running Verdaccio.
type Registry struct {
	// URL is its address, "http://127.0.0.1:PORT/".
	URL string

	mu       sync.Mutex
	requests []string // "GET /@acme%2fhello-mcp", in order
}

// dir is this package's directory: where Verdaccio is installed.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Start runs Verdaccio with the node binary node until the test ends. It
// fails the test when Verdaccio is not installed (npm ci in
// internal/npmregistry; make test does it).
func Start(t testing.TB, node string) *Registry {
	t.Helper()
	main := filepath.Join(dir(), "node_modules", "verdaccio", "bin", "verdaccio")
	if _, err := os.Stat(main); err != nil {
		t.Fatalf("%v\nthe npm registry of the install-once tests is Verdaccio: npm ci in internal/npmregistry (make test runs it)", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	work := t.TempDir()
	config := fmt.Sprintf(`storage: %s
uplinks: {}
packages:
  '**':
    access: $all
    publish: $all
auth:
  htpasswd:
    file: %s
    max_users: -1
log: {type: stdout, format: json, level: http}
`, filepath.Join(work, "storage"), filepath.Join(work, "htpasswd"))
	cfgPath := filepath.Join(work, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, main, "--config", cfgPath, "--listen", addr)
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &Registry{URL: "http://" + addr + "/"}
	ready := make(chan struct{})
	go r.read(out, ready)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("verdaccio did not start:\n%s", stderr.String())
	}
	return r
}

// read follows Verdaccio's JSON log: ready is closed once it listens;
// each request it answers is recorded.
func (r *Registry) read(out io.Reader, ready chan struct{}) {
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	once := sync.OnceFunc(func() { close(ready) })
	defer once()
	for sc.Scan() {
		var l struct {
			Msg string `json:"msg"`
			Req struct {
				Method string `json:"method"`
				URL    string `json:"url"`
			} `json:"req"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if strings.Contains(l.Msg, "http address") {
			once()
		}
		if strings.Contains(l.Msg, " requested ") && l.Req.Method != "" {
			r.mu.Lock()
			r.requests = append(r.requests, l.Req.Method+" "+l.Req.URL)
			r.mu.Unlock()
		}
	}
}

// Requests returns the requests the registry has answered so far.
func (r *Registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// Package is a package to publish: its package.json fields and files.
type Package struct {
	Name, Version string
	// Bin maps program names to files, as package.json's bin.
	Bin map[string]string
	// Files maps file names to contents.
	Files map[string]string
}

// Publish publishes p with npm publish (the npm in PATH), as an author
// would: any token will do, the registry lets anyone publish.
func (r *Registry) Publish(t testing.TB, p Package) {
	t.Helper()
	work := t.TempDir()
	pj, err := json.Marshal(map[string]any{"name": p.Name, "version": p.Version, "bin": p.Bin, "license": "MIT"})
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(r.URL, "http:")
	files := map[string]string{"package.json": string(pj), ".npmrc": host + ":_authToken=test\n"}
	for name, body := range p.Files {
		files[name] = body
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("npm", "publish", "--registry", r.URL, "--cache", filepath.Join(work, ".cache"), "--no-update-notifier")
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm publish %s@%s: %v\n%s", p.Name, p.Version, err, out)
	}
}
