package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/diagnose"
	"github.com/plughost/plughost/sandbox"
)

// A declared server that fails to resolve a host it was given a URL of
// (in its env or its args) gets the allow_net of that URL's port: Node's
// and Go's resolver errors name no port, and 443 is not always it.
func TestFailureOfDeclaredURLs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "fetch.mcp.json")
	decl := `{"command": "npx", "args": ["-y", "@acme/fetch-mcp", "--api=http://ollama.lan/v1"],
	  "env": {"FETCH_URL": "https://some.test.name:8443/", "MODE": "fast"}}`
	if err := os.WriteFile(path, []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	f := failureOf(&sandbox.Policy{}, "fetch", path, "EAI_AGAIN: getaddrinfo EAI_AGAIN some.test.name", "")
	if diff := cmp.Diff([]string{"http://ollama.lan/v1", "https://some.test.name:8443/"}, f.URLs); diff != "" {
		t.Errorf("URLs (-want +got):\n%s", diff)
	}
	want := `add allow_net = ["some.test.name:8443"] (or "all") to plugin "fetch" in the sandbox block: it has no network, and it tried to reach some.test.name`
	if got := diagnose.NextStep(f); got != want {
		t.Errorf("next step:\n got %s\nwant %s", got, want)
	}
}
