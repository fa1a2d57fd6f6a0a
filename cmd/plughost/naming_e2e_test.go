package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/naming"
)

// runCLI runs bin/plughost with args over a fresh workspace and state
// directory and returns its stdout; it fails the test if plughost fails.
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := tryCLI(t, args...)
	if err != nil {
		t.Fatalf("plughost %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout
}

// tryCLI runs bin/plughost as runCLI does and returns its output and exit.
func tryCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	workspace := t.TempDir()
	// As root the sandbox runs plugins as uid 65534.
	if err := os.Chmod(workspace, 0o777); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin.plughost, append(args, "--workspace", workspace)...)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// A plugin file whose name cannot be a provider name is served under a
// derived one, shown by `plughost plugins`; a file whose provider name
// another file has is listed as refused. Neither is "running" with nothing
// served (issue 16).
func TestPluginFileNames(t *testing.T) {
	t.Parallel()
	long37 := "a-plugin-with-a-rather-long-file-name"
	derived, _ := naming.ForFile(long37)
	tests := map[string]struct {
		files   []string // copies of the echo plugin
		want    []string // regular expressions matching `plughost plugins`' output
		refused bool     // a file is refused: plughost plugins exits with status 1
	}{
		"a 37-character file name": {
			files: []string{long37},
			want: []string{`(?m)^` + derived + ` +running`, `(?m)^  echo +Returns`,
				`provider name derived from file name "` + long37 + `": shortened to 32 characters`},
		},
		"a device- prefix": {
			files: []string{"device-echo"},
			want:  []string{`(?m)^plugin-device-echo +running`, `(?m)^  echo +Returns`, `the prefix device- belongs to devices`},
		},
		"two files, one provider name": {
			files:   []string{"echo", "echo.sh"},
			want:    []string{`(?m)^echo +running`, `(?m)^echo +refused +echo.sh not loaded: the plugin file echo has the same provider name`},
			refused: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, f := range tc.files {
				copyPlugin(t, "echo", dir, f)
			}
			out, stderr, err := tryCLI(t, "plugins", "--plugins", dir)
			if code := exitCode(err); code != 0 && !tc.refused || code != 1 && tc.refused {
				t.Errorf("plughost plugins exited with %d (%v); refused: %v\nstderr:\n%s", code, err, tc.refused, stderr)
			}
			for _, w := range tc.want {
				if !regexp.MustCompile(w).MatchString(out) {
					t.Errorf("plughost plugins does not show %q:\n%s", w, out)
				}
			}
		})
	}
}

// The tools of a plugin with a 37-character file name reach a client; a
// call with invalid arguments prints the isError result a client would get.
func TestLongPluginFileNameCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyPlugin(t, "echo", dir, "a-plugin-with-a-rather-long-file-name")
	if out := runCLI(t, "call", "echo", "--args", `{"text":"served"}`, "--plugins", dir); strings.TrimSpace(out) != "served" {
		t.Errorf("plughost call echo printed %q, want served", out)
	}
	out, stderr, err := tryCLI(t, "call", "echo", "--plugins", dir)
	const want = `invalid arguments for tool "echo": /text: missing required property`
	if err == nil || !strings.Contains(out, want) || !strings.Contains(stderr, errToolFailed.Error()) {
		t.Errorf("plughost call echo without arguments: %v\nstdout:\n%s\nstderr:\n%s\nwant it to fail printing %q", err, out, stderr, want)
	}
}
