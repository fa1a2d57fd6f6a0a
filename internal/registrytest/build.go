//go:build unix

package registrytest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// registryVersion is the official registry's release that
// registryserver/go.mod pins; the binary reports it at /v0.1/version.
const registryVersion = "1.8.9"

// registryPackage is the registry server's main package.
const registryPackage = "github.com/modelcontextprotocol/registry/cmd/registry"

// buildTimeout bounds the first build (about 40 s on two cores with the
// modules downloaded).
const buildTimeout = 10 * time.Minute

// dir is this package's directory, where registryserver/ is.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// built builds the registry once per test process.
var built = sync.OnceValues(buildRegistry)

// registryBinary returns the path of the official registry's program,
// built from registryserver/ the first time.
func registryBinary(t testing.TB) string {
	t.Helper()
	path, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// buildRegistry builds the registry with `go build` in registryserver/,
// whose go.mod and go.sum pin it and its dependencies. The program is kept
// in the user's cache directory under a name derived from go.mod, go.sum
// and the Go release: later test processes (and other packages' tests)
// find it there and build nothing; a change to the pins builds anew. It is
// written beside its place and renamed, so that no process ever runs half
// a file.
func buildRegistry() (string, error) {
	src := filepath.Join(dir(), "registryserver")
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", fmt.Errorf("the official registry's pins: %w", err)
		}
		h.Write(b)
	}
	h.Write([]byte(runtime.Version()))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	out := filepath.Join(cache, "plughost-registrytest", "registry-"+registryVersion+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	// One build at a time: the test processes of several packages (go test
	// ./... runs them side by side) wait for the first one's program
	// rather than each compiling the registry again.
	lock, err := os.OpenFile(filepath.Join(filepath.Dir(out), ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close() // and so unlocked
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	defer os.Remove(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), "build", "-ldflags", "-X main.Version="+registryVersion, "-o", tmp, registryPackage)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the official MCP Registry (go build %s in %s, limit %v): %v\n%s", registryPackage, src, buildTimeout, err, b)
	}
	fmt.Fprintf(os.Stderr, "registrytest: built the official MCP Registry %s in %v\n", registryVersion, time.Since(start).Round(time.Millisecond))
	return out, os.Rename(tmp, out)
}

// goTool is the go command that runs the tests.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "/usr/local/go/bin/go"
}
