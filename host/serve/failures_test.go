package serve

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/diagnose"
	"github.com/plughost/plughost/host/manager"
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

// Only a command that loads and exits (plugins, call) remembers the
// failure last logged across processes: serve, a daemon, logs each
// failure whole once per process, so that one restarted into the same
// failure still writes its stderr and next step to its own log.
func TestFailureDirOnlyForOneShotCommands(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	cfg, err := config.Parse([]byte(""), "c.hcl")
	if err != nil {
		t.Fatal(err)
	}
	var oneShot, serve manager.Options
	failureOptions(&oneShot, newLiveConfig(cfg), true)
	failureOptions(&serve, newLiveConfig(cfg), false)
	if want := filepath.Join(cache, "plughost", "failures"); oneShot.FailureDir != want {
		t.Errorf("a one-shot command's FailureDir %q, want %q", oneShot.FailureDir, want)
	}
	if serve.FailureDir != "" {
		t.Errorf("serve's FailureDir %q, want none: it logs each failure once per process", serve.FailureDir)
	}
	if serve.NextStep == nil || serve.StartTimeoutSetting != startTimeoutSetting {
		t.Error("serve lost its next steps or its start limit's setting")
	}
}
