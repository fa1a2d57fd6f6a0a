package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/declared"
)

func TestDownloadBundle(t *testing.T) {
	body := []byte("PK\x03\x04 a bundle")
	sum := sha256.Sum256(body)
	good := hex.EncodeToString(sum[:])
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	dir := t.TempDir()
	path, err := DownloadBundle(context.Background(), srv.Client(), srv.URL+"/x.mcpb", good, 0, dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(body) {
		t.Fatalf("downloaded %q", b)
	}
	os.Remove(path)
	bad := strings.Repeat("0", 64)
	if _, err := DownloadBundle(context.Background(), srv.Client(), srv.URL+"/x.mcpb", bad, 0, dir); !errors.Is(err, ErrDigest) || !strings.Contains(err.Error(), good) {
		t.Fatalf("a wrong fileSha256: %v", err)
	}
	if _, err := DownloadBundle(context.Background(), srv.Client(), srv.URL+"/x.mcpb", good, 4, dir); err == nil || !strings.Contains(err.Error(), "over the limit of 4") {
		t.Fatalf("over the limit: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("refused downloads left %v", left)
	}
	if _, err := DownloadBundle(context.Background(), srv.Client(), "http://bundles.example.com/x.mcpb", good, 0, dir); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("plain http: %v", err)
	}
}

func TestUpgrade(t *testing.T) {
	old := testServer(t)
	next := testServer(t)
	next.Version = "1.1.0"
	next.Packages[1].Version = "1.1.0"
	next.Packages[1].EnvironmentVariables[0].Description = "reworded"
	d := &declared.Server{Command: "npx", Args: []string{"-y", "@example/server-memory@1.0.0", "--mode=ram"},
		Origin: &declared.Origin{Name: old.Name, Version: "1.0.0", Type: TypeNPM}}
	u, err := Upgrade(d, old, next)
	if err != nil {
		t.Fatal(err)
	}
	if u.Args[1] != "@example/server-memory@1.1.0" || u.Origin.Version != "1.1.0" || d.Args[1] != "@example/server-memory@1.0.0" || d.Origin.Version != "1.0.0" {
		t.Fatalf("upgraded %+v from %+v", u, d)
	}
	next.Packages[1].EnvironmentVariables[0].IsSecret = true
	if _, err := Upgrade(d, old, next); err == nil || !strings.Contains(err.Error(), "asks for other values") || !strings.Contains(err.Error(), "plughost install --force io.example/memory@1.1.0") {
		t.Fatalf("other values: %v", err)
	}
}

// TestUpgradeMCPB: an mcpb package's identifier is its download URL,
// another for each version: the declaration comes back with only its
// origin's version changed (the caller names the new bundle); one whose
// new version asks for other values is refused.
func TestUpgradeMCPB(t *testing.T) {
	entry := func(version string) *Server {
		return &Server{Name: "io.example/hello-bundle", Version: version, Packages: []Package{{RegistryType: TypeMCPB,
			Identifier: "https://example.com/hello-" + version + ".mcpb", Version: version, FileSHA256: strings.Repeat(version[:1], 64),
			Transport: Transport{Type: TransportStdio}}}}
	}
	d := &declared.Server{Bundle: "/state/bundles/hello/" + strings.Repeat("a", 64) + ".mcpb", BundleSHA256: strings.Repeat("a", 64),
		UserConfig: map[string]any{"who": "ada"}, Origin: &declared.Origin{Name: "io.example/hello-bundle", Version: "1.0.0", Type: TypeMCPB, Registry: "https://r.example"}}
	u, err := Upgrade(d, entry("1.0.0"), entry("2.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	if u.Origin.Version != "2.0.0" || u.Bundle != d.Bundle || u.UserConfig["who"] != "ada" || d.Origin.Version != "1.0.0" {
		t.Fatalf("upgraded %+v from %+v", u, d)
	}
	next := entry("2.0.0")
	next.Packages[0].EnvironmentVariables = []KeyValue{{Name: "TOKEN"}}
	if _, err := Upgrade(d, entry("1.0.0"), next); err == nil || !strings.Contains(err.Error(), "plughost install --force io.example/hello-bundle@2.0.0") {
		t.Fatalf("other values: %v", err)
	}
}
