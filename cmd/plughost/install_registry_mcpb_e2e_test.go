//go:build unix

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/internal/registrytest"
)

// TestInstallRegistryMCPB: an mcpb entry of the official registry
// (internal/registrytest) names a bundle the real mcpb CLI packed, on a
// loopback server; plughost install downloads it, checks its fileSha256,
// installs it as a bundle file (the declaration's origin says which
// registry entry), and serve lists and calls its tools.
func TestInstallRegistryMCPB(t *testing.T) {
	t.Parallel()
	bundle := buildFilesystemBundle(t, nil)
	body, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	t.Cleanup(files.Close)
	doc := serverJSON(t, "io.github.example/fs-bundle", "1.0.0", map[string]any{"packages": []any{
		map[string]any{"registryType": "mcpb", "identifier": files.URL + "/fs-bundle.mcpb", "version": "1.0.0",
			"fileSha256": hex.EncodeToString(sum[:]), "transport": map[string]any{"type": "stdio"}},
	}})
	reg := registrytest.Start(t, []byte(doc)).URL
	plugins, stateHome, granted := t.TempDir(), t.TempDir(), t.TempDir()
	os.Chmod(granted, 0o777)
	os.WriteFile(filepath.Join(granted, "hello.txt"), []byte("hi"), 0o644)
	config := filepath.Join(t.TempDir(), "plughost.hcl")
	env := []string{"XDG_STATE_HOME=" + stateHome}
	out, code := plughostIn(t, "", env, "install", "io.github.example/fs-bundle", "--registry", reg, "--plugins", plugins, "--config-out", config,
		"--yes", "--set", "allowed_directories="+granted)
	if code != 0 || !strings.Contains(out, "sha256:    "+hex.EncodeToString(sum[:])) {
		t.Fatalf("plughost install (exit %d):\n%s", code, out)
	}
	d, err := declared.Load(filepath.Join(plugins, "fs-bundle"+declared.Suffix))
	if err != nil || d.Origin == nil || d.Origin.Name != "io.github.example/fs-bundle" || d.Origin.Type != "mcpb" || d.Origin.Registry != reg {
		t.Fatalf("the declaration (%v): %+v", err, d)
	}
	c := serveWrappedStdio(t, plugins, config, env...)
	c.awaitTool(t, "list_directory")
	if got := c.call(t, "list_directory", map[string]any{"path": granted}); !strings.Contains(got, "hello.txt") {
		t.Fatalf("list_directory = %q", got)
	}
}
