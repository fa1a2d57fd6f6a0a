package main

import (
	"strings"
	"testing"
)

// TestUninstallRefusesAPath: NAME is joined to the plugin and state
// directories, so a name that is a path ("../x") is refused before any
// of them is touched.
func TestUninstallRefusesAPath(t *testing.T) {
	t.Parallel()
	var out, errOut strings.Builder
	code := run([]string{"uninstall", "../x", "--plugins", t.TempDir(), "--state", t.TempDir()}, strings.NewReader(""), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "plughost uninstall:") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}
