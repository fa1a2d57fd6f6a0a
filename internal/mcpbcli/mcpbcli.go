// Package mcpbcli runs the MCP Bundle CLI, @anthropic-ai/mcpb, for tests:
// `mcpb pack`, `sign`, `verify`, `info`, `unsign` as bundle authors run
// them. It is pinned by package.json and package-lock.json beside this
// file (make test and .ci/run run npm ci here) and runs on the Node 22 of
// conformance/node_modules.
//
//	out, err := mcpbcli.Run(t, "pack", dir, bundle)
//	out, err = mcpbcli.Run(t, "sign", bundle, "--cert", cert, "--key", key)
//
// `mcpb sign --self-signed` writes its certificate and key into the
// installed package (node_modules/@anthropic-ai/mcpb/self-signed-*.pem)
// on first use and reuses them after: that is mcpb's own behaviour.
package mcpbcli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// timeout bounds one run of the CLI.
const timeout = 2 * time.Minute

// dir is this package's directory: where the CLI is installed.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Paths returns the node binary and mcpb's CLI script; it fails the test
// when either is not installed (npm ci in conformance/ and in
// internal/mcpbcli; make test does both).
func Paths(t testing.TB) (node, cli string) {
	t.Helper()
	node = filepath.Join(dir(), "..", "..", "conformance", "node_modules", ".bin", "node")
	cli = filepath.Join(dir(), "node_modules", "@anthropic-ai", "mcpb", "dist", "cli", "cli.js")
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the mcpb CLI needs %s (make test runs npm ci in conformance/ and internal/mcpbcli/): %v", p, err)
		}
	}
	return node, cli
}

// Run runs mcpb with args and returns its combined output; err is the
// exit error when mcpb failed. Its working directory is the test's
// temporary directory.
func Run(t testing.TB, args ...string) (string, error) {
	t.Helper()
	node, cli := Paths(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{cli}, args...)...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	return string(out), err
}
