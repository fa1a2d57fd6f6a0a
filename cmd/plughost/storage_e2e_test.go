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
	t.Parallel()
	want := regexp.MustCompile(`(?m)^echo +running .*data 2(\.0)? MiB of 16 MiB, tmp [0-9.]+ (B|KiB) of 8 MiB`)
	t.Run("host uid "+fmt.Sprint(os.Geteuid()), func(t *testing.T) { pluginsShowsStorage(t, -1, "16MiB", want) })
	if os.Geteuid() == 0 {
		t.Run("host uid 1000", func(t *testing.T) { pluginsShowsStorage(t, 1000, "16MiB", want) })
	}
}

// A plugin whose data directory is over its data_size does not start,
// and plughost plugins says why and what to do.
func TestDataSizeRefusesStart(t *testing.T) {
	t.Parallel()
	pluginsShowsStorage(t, -1, "1MiB", regexp.MustCompile(`(?m)^echo +failed .*the data directory of echo \(.*\) holds 2\.0 MiB, over its limit of 1\.0 MiB: remove files there, or raise data_size in its sandbox block`))
}

// pluginsShowsStorage runs plughost plugins (as uid, or as the test's own
// uid when uid < 0) over the echo plugin with 2 MiB in its data directory,
// tmp_size 8 MiB and dataSize, and matches its output against want.
func pluginsShowsStorage(t *testing.T, uid int, dataSize string, want *regexp.Regexp) {
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
	if err := os.WriteFile(config, []byte("sandbox {\n  plugin \"echo\" {\n    tmp_size  = \"8MiB\"\n    data_size = \""+dataSize+"\"\n  }\n}\n"), 0o644); err != nil {
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
	err = cmd.Run()
	if !want.MatchString(out.String()) {
		t.Logf("plughost plugins: %v\nstderr:\n%s", err, errOut.String())
		t.Errorf("plughost plugins does not match %s:\n%s", want, out.String())
	}
}
