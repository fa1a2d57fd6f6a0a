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
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
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

// Mirror fills the registry with the packages roots need, exactly as the
// lockfile at lockfile pins them (an npm v2/v3 package-lock.json whose
// tree holds them): the closure of their dependencies, optional and peer
// ones included, each version the tree resolves. npm packs them all in
// one invocation, from its cache when it has them (--prefer-offline: after
// npm ci of that lockfile nothing is downloaded), and each tarball is
// published as it is (PublishTarball), so that its integrity is the
// public registry's. It returns the name@version specs published.
func (r *Registry) Mirror(t testing.TB, lockfile string, roots ...string) []string {
	t.Helper()
	specs, err := Closure(lockfile, roots...)
	if err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	args := append([]string{"pack", "--prefer-offline", "--json", "--pack-destination", dest, "--no-update-notifier"}, specs...)
	cmd := exec.Command("npm", args...)
	cmd.Dir = dest
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm pack of %d packages: %v\n%s", len(specs), err, stderr.String())
	}
	var packed []struct {
		Name     string `json:"name"`
		Filename string `json:"filename"`
	}
	if err := json.Unmarshal(out, &packed); err != nil || len(packed) != len(specs) {
		t.Fatalf("npm pack printed %d packages for %d (%v):\n%s", len(packed), len(specs), err, out)
	}
	// Four packages at a time; the versions of one in turn (the last one
	// published is its latest).
	byName := map[string][]string{}
	var names []string
	for _, p := range packed {
		if byName[p.Name] == nil {
			names = append(names, p.Name)
		}
		byName[p.Name] = append(byName[p.Name], filepath.Join(dest, p.Filename))
	}
	errs := make(chan error, len(names))
	sem := make(chan struct{}, 4)
	for _, name := range names {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			for _, file := range byName[name] {
				if err := r.publishTarball(file); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range names {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return specs
}

// Closure returns, sorted, the name@version of every package the roots
// need in lockfile's tree: each root's entry at node_modules/ROOT, then,
// for each dependency (optional and peer ones too), the entry Node's
// resolution finds from the dependent's place (its own node_modules, then
// each parent's). A dependency the tree lacks is an error unless it is
// optional or an optional peer.
func Closure(lockfile string, roots ...string) ([]string, error) {
	b, err := os.ReadFile(lockfile)
	if err != nil {
		return nil, err
	}
	type entry struct {
		Version              string                             `json:"version"`
		Dependencies         map[string]string                  `json:"dependencies"`
		OptionalDependencies map[string]string                  `json:"optionalDependencies"`
		PeerDependencies     map[string]string                  `json:"peerDependencies"`
		PeerMeta             map[string]struct{ Optional bool } `json:"peerDependenciesMeta"`
	}
	var lock struct {
		Packages map[string]entry `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		return nil, fmt.Errorf("%s: %w", lockfile, err)
	}
	find := func(from, name string) string {
		for base := from; ; {
			p := "node_modules/" + name
			if base != "" {
				p = base + "/" + p
			}
			if _, ok := lock.Packages[p]; ok {
				return p
			}
			if base == "" {
				return ""
			}
			if i := strings.LastIndex(base, "/node_modules/"); i >= 0 {
				base = base[:i]
			} else {
				base = ""
			}
		}
	}
	seen := map[string]bool{}
	var stack []string
	for _, r := range roots {
		p := find("", r)
		if p == "" {
			return nil, fmt.Errorf("%s: no %s in its tree", lockfile, r)
		}
		stack = append(stack, p)
	}
	specs := map[string]bool{}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[p] {
			continue
		}
		seen[p] = true
		e := lock.Packages[p]
		name := p[strings.LastIndex(p, "node_modules/")+len("node_modules/"):]
		specs[name+"@"+e.Version] = true
		need := func(deps map[string]string, optional func(string) bool) error {
			for d := range deps {
				if q := find(p, d); q != "" {
					stack = append(stack, q)
				} else if !optional(d) {
					return fmt.Errorf("%s: %s needs %s, which its tree lacks", lockfile, p, d)
				}
			}
			return nil
		}
		if err := need(e.Dependencies, func(string) bool { return false }); err != nil {
			return nil, err
		}
		if err := need(e.OptionalDependencies, func(string) bool { return true }); err != nil {
			return nil, err
		}
		if err := need(e.PeerDependencies, func(d string) bool { return e.PeerMeta[d].Optional }); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(specs))
	for s := range specs {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}

// PublishTarball publishes the package tarball at path as npm publish
// would, over npm's registry protocol (PUT /NAME with the manifest and
// the tarball attached): the manifest is the tarball's package.json, the
// tarball is stored unchanged.
func (r *Registry) PublishTarball(t testing.TB, path string) {
	t.Helper()
	if err := r.publishTarball(path); err != nil {
		t.Fatal(err)
	}
}

func (r *Registry) publishTarball(path string) error {
	tgz, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	manifest, files, size, err := tarballManifest(tgz)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	name, _ := manifest["name"].(string)
	version, _ := manifest["version"].(string)
	if name == "" || version == "" {
		return fmt.Errorf("%s: its package.json has no name or version", path)
	}
	sha1sum, sha512sum := sha1.Sum(tgz), sha512.Sum512(tgz)
	file := name + "-" + version + ".tgz"
	manifest["_id"] = name + "@" + version
	manifest["dist"] = map[string]any{
		"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:]),
		"shasum":    hex.EncodeToString(sha1sum[:]),
		"tarball":   r.URL + name + "/-/" + file,
		// What npm publish adds, as the public registry has it.
		"fileCount": files, "unpackedSize": size,
	}
	body, err := json.Marshal(map[string]any{
		"_id": name, "name": name, "description": manifest["description"],
		"dist-tags": map[string]string{"latest": version},
		"versions":  map[string]any{version: manifest},
		"access":    nil,
		"_attachments": map[string]any{file: map[string]any{
			"content_type": "application/octet-stream", "data": base64.StdEncoding.EncodeToString(tgz), "length": len(tgz)}},
	})
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPut, r.URL+strings.Replace(name, "/", "%2f", 1), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("publish %s@%s: %w", name, version, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("publish %s@%s: %s: %s", name, version, resp.Status, msg)
	}
	return nil
}

// tarballManifest reads package.json at the top of a package tarball
// (its one top directory, "package/" as npm packs it), and counts its
// files and their size.
func tarballManifest(tgz []byte) (manifest map[string]any, files int, size int64, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, 0, 0, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, 0, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		files++
		size += h.Size
		if dir, file, ok := strings.Cut(strings.TrimPrefix(h.Name, "./"), "/"); ok && dir != "" && file == "package.json" && manifest == nil {
			if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
				return nil, 0, 0, fmt.Errorf("package.json: %w", err)
			}
		}
	}
	if manifest == nil {
		return nil, 0, 0, fmt.Errorf("no package.json")
	}
	return manifest, files, size, nil
}
