package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// `plughost plugins` shows what each running plugin holds of its storage
// limits: its data directory (2 MiB written there before it starts) and
// its tmp, against data_size and tmp_size (issue 31); when the tests run
// as root, again with plughost as uid 1000, which reads the tmpfs in the
// plugin's mount namespace through its user namespace.
func TestPluginsShowsStorage(t *testing.T) {
	t.Run("host uid "+fmt.Sprint(os.Geteuid()), func(t *testing.T) { pluginsShowsStorage(t, -1) })
	if os.Geteuid() == 0 {
		t.Run("host uid 1000", func(t *testing.T) { pluginsShowsStorage(t, 1000) })
	}
}

func pluginsShowsStorage(t *testing.T, uid int) {
	base, err := os.MkdirTemp("", "plughost-storage-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir, state, workspace := filepath.Join(base, "plugins"), filepath.Join(base, "state"), filepath.Join(base, "workspace")
	data := filepath.Join(state, "plughost", "plugins", "echo", "data")
	for _, d := range []string{dir, workspace, data, filepath.Join(base, "xdg")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(base, 0o755)
	os.Chmod(workspace, 0o777) // as root the sandbox runs plugins as uid 65534
	copyPlugin(t, "echo", dir, "echo")
	if err := os.WriteFile(filepath.Join(data, "cache"), bytes.Repeat([]byte{1}, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(base, "plughost.hcl")
	if err := os.WriteFile(config, []byte("sandbox {\n  plugin \"echo\" {\n    tmp_size  = \"8MiB\"\n    data_size = \"16MiB\"\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{bin.plughost, "plugins", "--plugins", dir, "--config", config, "--workspace", workspace}
	if uid >= 0 {
		if err := os.Chmod(bin.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		filepath.Walk(base, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, uid) })
		args = append([]string{"setpriv", "--reuid", fmt.Sprint(uid), "--regid", fmt.Sprint(uid), "--clear-groups"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	xdg := filepath.Join(base, "xdg")
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+xdg, "XDG_CACHE_HOME="+xdg, "XDG_STATE_HOME="+state, "HOME="+base)
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
