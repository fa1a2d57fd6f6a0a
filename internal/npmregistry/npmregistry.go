// Package npmregistry runs a real npm registry for tests: Verdaccio, as
// pinned by package.json and package-lock.json beside this file (make
// test runs npm ci here), serving on a loopback port only the packages a
// test publishes to it, with no uplink to any other registry.
// (Run, without a test, can give it one: the benchmark's install section
// fetches a real server's dependencies through it.)
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
	r, stop, err := Run(node, &Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return r
}

// Options configure Run. The zero value (or nil) is a registry that serves
// only what is published to it, in a temporary directory.
type Options struct {
	// Dir holds the registry's configuration and storage; empty: a new
	// temporary directory, removed by stop.
	Dir string
	// Verdaccio is the path of Verdaccio's program; empty: the one npm ci
	// installed beside this file (a binary built elsewhere, such as the
	// benchmark's, names it, since this file's path is the build's).
	Verdaccio string
	// Uplink is a registry URL that Verdaccio asks for what it does not
	// hold, keeping every answer and tarball it fetches; empty: no uplink,
	// a package nobody published is a 404. Fetched metadata counts as
	// fresh for an hour, so that once a package has been installed
	// through the registry, installing it again asks the uplink nothing.
	// Tests leave it empty: they must not depend on the network.
	Uplink string
}

// Run starts Verdaccio with the node binary node and returns once it
// listens; stop kills it (and removes Dir when Run made it).
func Run(node string, opts *Options) (r *Registry, stop func(), err error) {
	if opts == nil {
		opts = &Options{}
	}
	main := opts.Verdaccio
	if main == "" {
		main = filepath.Join(dir(), "node_modules", "verdaccio", "bin", "verdaccio")
	}
	if _, err := os.Stat(main); err != nil {
		return nil, nil, fmt.Errorf("%w\nthe npm registry of the install-once tests is Verdaccio: npm ci in internal/npmregistry (make test runs it)", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	addr := l.Addr().String()
	l.Close()
	work, cleanup := opts.Dir, func() {}
	if work == "" {
		if work, err = os.MkdirTemp("", "npmregistry-"); err != nil {
			return nil, nil, err
		}
		cleanup = func() { os.RemoveAll(work) }
	} else if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, nil, err
	}
	uplinks, proxy := "{}", ""
	if opts.Uplink != "" {
		// maxage: metadata fetched once is fresh for an hour; cache: keep
		// the tarballs.
		uplinks = fmt.Sprintf("\n  upstream:\n    url: %s\n    maxage: 1h\n    cache: true\n    timeout: 60s", opts.Uplink)
		proxy = "\n    proxy: upstream"
	}
	config := fmt.Sprintf(`storage: %s
uplinks: %s
packages:
  '**':
    access: $all
    publish: $all%s
auth:
  htpasswd:
    file: %s
    max_users: -1
log: {type: stdout, format: json, level: http}
`, filepath.Join(work, "storage"), uplinks, proxy, filepath.Join(work, "htpasswd"))
	cfgPath := filepath.Join(work, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		cleanup()
		return nil, nil, err
	}
	cmd := exec.Command(node, main, "--config", cfgPath, "--listen", addr)
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cleanup()
		return nil, nil, err
	}
	r = &Registry{URL: "http://" + addr + "/"}
	ready := make(chan struct{})
	go r.read(out, ready)
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		cleanup()
	}
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		stop()
		return nil, nil, fmt.Errorf("verdaccio did not start:\n%s", stderr.String())
	}
	return r, stop, nil
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
