package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// `plughost plugins` shows what each running plugin holds of its storage
// limits: its data directory (2 MiB written there before it starts) and
// its tmp, against data_size and tmp_size (issue 31).
func TestPluginsShowsStorage(t *testing.T) {
	t.Parallel()
	dir, state, workspace := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Chmod(workspace, 0o777); err != nil { // as root the sandbox runs plugins as uid 65534
		t.Fatal(err)
	}
	copyPlugin(t, "echo", dir, "echo")
	data := filepath.Join(state, "plughost", "plugins", "echo", "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "cache"), bytes.Repeat([]byte{1}, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(config, []byte("sandbox {\n  plugin \"echo\" {\n    tmp_size  = \"8MiB\"\n    data_size = \"16MiB\"\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin.plughost, "plugins", "--plugins", dir, "--config", config, "--workspace", workspace)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+state)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("plughost plugins: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	want := regexp.MustCompile(`(?m)^echo +running .*data 2(\.0)? MiB of 16 MiB, tmp [0-9.]+ (B|KiB) of 8 MiB`)
	if !want.MatchString(out.String()) {
		t.Errorf("plughost plugins does not match %s:\n%s", want, out.String())
	}
}
