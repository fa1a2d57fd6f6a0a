package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/serve"
)

// failingPlugins is a plugin directory with the echo plugin, a binary that
// is no plugin (/bin/true), a script that fails with an error on stderr,
// and the badplugin, whose definitions the host refuses.
func failingPlugins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyPlugin(t, "echo", dir, "echo")
	copyPlugin(t, "badplugin", dir, "badplugin")
	data, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho 'Error: boom' >&2\necho '    at main (/srv/plugin.js:1:7)' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "nodeish"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// exitCode is the exit status of a command that ran (-1 if it did not).
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		return -1
	}
}

// `plughost plugins` shows every plugin, failed or not, with its error and
// stderr, and every definition the host refused with the reason, and exits
// with status 1; --json says the same for a program (issue 20).
func TestPluginsShowsFailures(t *testing.T) {
	t.Parallel()
	dir := failingPlugins(t)

	stdout, stderr, err := tryCLI(t, "plugins", "--plugins", dir)
	if code := exitCode(err); code != 1 {
		t.Errorf("plughost plugins exited with %d (%v), want 1\nstderr:\n%s", code, err, stderr)
	}
	if !strings.Contains(stderr, "plughost plugins: 2 plugins failed, 8 definitions refused") {
		t.Errorf("stderr does not sum up the failures:\n%s", stderr)
	}
	for _, w := range []string{
		`(?m)^echo +running`, `(?m)^  echo +Returns the given text unchanged\.$`,
		`(?m)^p +failed +start: Unrecognized remote plugin message:$`,
		`(?m)^nodeish +failed +start: .*\n(.*\n)*    stderr of nodeish:\n      Error: boom\n       *at main \(/srv/plugin\.js:1:7\)$`,
		`(?m)^badplugin +running`, `(?m)^  ok +A valid tool\.$`, `(?m)^  resource bad://fine$`,
		`(?m)^  REFUSED tool "bad_schema": inputSchema does not compile: .*minimum`,
		`(?m)^  REFUSED tool "no_schema": tool definition has no "inputSchema"$`,
		`(?m)^  REFUSED tool "bad name!": invalid tool name "bad name!"`,
		`(?m)^  REFUSED tool without a name: definition 5 of the list has no "name" string`,
		`(?m)^  REFUSED tool "ok": the plugin lists this tool more than once; keeping the first$`,
		`(?m)^  REFUSED resource "not a uri": "uri" "not a uri" is not an absolute URI`,
		`(?m)^  REFUSED resource template "bad://\{unclosed": "uriTemplate" "bad://\{unclosed" is not an RFC 6570 URI template`,
		`(?m)^  REFUSED prompt "broken_prompt": "arguments" is not an array, got string$`,
	} {
		if !regexp.MustCompile(w).MatchString(stdout) {
			t.Errorf("plughost plugins does not show %s:\n%s", w, stdout)
		}
	}

	stdout, stderr, err = tryCLI(t, "plugins", "--json", "--plugins", dir)
	if code := exitCode(err); code != 1 {
		t.Errorf("plughost plugins --json exited with %d (%v), want 1\nstderr:\n%s", code, err, stderr)
	}
	var r serve.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("plughost plugins --json printed no JSON report: %v\n%s", err, stdout)
	}
	if r.OK || r.Failed != 2 || r.Refused != 8 || r.Dir != dir || len(r.Plugins) != 4 {
		t.Errorf("report: ok %v, %d failed, %d refused, dir %s, %d plugins; want not ok, 2, 8, %s, 4", r.OK, r.Failed, r.Refused, r.Dir, len(r.Plugins), dir)
	}
	plugins := map[string]serve.PluginReport{}
	for _, p := range r.Plugins {
		plugins[p.Name] = p
	}
	if p := plugins["echo"]; p.Failed || p.State != "running" || p.Contract != pluginclient.ContractVersion || len(p.Tools) != 2 || p.Tools[0].Name != "echo" || len(p.Refused) != 0 {
		t.Errorf("echo in the report: %+v", p)
	}
	if p := plugins["p"]; !p.Failed || p.State != "failed" || !strings.Contains(p.Error, "Unrecognized remote plugin message") {
		t.Errorf("p in the report: %+v", p)
	}
	if p := plugins["nodeish"]; !p.Failed || !strings.HasPrefix(p.Stderr, "Error: boom\n") || strings.Contains(p.Error, "Error: boom") {
		t.Errorf("nodeish in the report: %+v", p)
	}
	bad := plugins["badplugin"]
	if bad.Failed || len(bad.Tools) != 1 || bad.Tools[0].ExposedName != "ok" || len(bad.Resources) != 1 || bad.Resources[0].URI != "bad://fine" {
		t.Errorf("badplugin in the report: %+v", bad)
	}
	var refused []string
	for _, rf := range bad.Refused {
		if rf.Reason == "" {
			t.Errorf("refusal without a reason: %+v", rf)
		}
		refused = append(refused, rf.Kind+" "+rf.Name)
	}
	want := []string{"tool ", "tool ok", "tool bad_schema", "tool no_schema", "tool bad name!",
		"resource not a uri", "resource template bad://{unclosed", "prompt broken_prompt"}
	if strings.Join(refused, "|") != strings.Join(want, "|") {
		t.Errorf("badplugin's refusals = %q, want %q", refused, want)
	}
}

// A directory whose plugins all load and offer nothing refused: status 0.
func TestPluginsAllWell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyPlugin(t, "echo", dir, "echo")
	stdout, stderr, err := tryCLI(t, "plugins", "--json", "--plugins", dir)
	if err != nil {
		t.Fatalf("plughost plugins --json: %v\nstderr:\n%s", err, stderr)
	}
	var r serve.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || !r.OK || len(r.Plugins) != 1 {
		t.Errorf("report %+v (%v), want ok with one plugin", r, err)
	}
}

// `plughost call` of a tool the host refused names its plugin and the
// reason; of a tool missing while a plugin failed, it names that plugin, its
// error and its stderr.
func TestCallNamesTheFailure(t *testing.T) {
	t.Parallel()
	dir := failingPlugins(t)

	_, stderr, err := tryCLI(t, "call", "bad_schema", "--plugins", dir)
	if code := exitCode(err); code != 1 ||
		!strings.Contains(stderr, `plughost call: tool "bad_schema" of plugin badplugin is not served: inputSchema does not compile`) {
		t.Errorf("plughost call bad_schema: exit %d (%v)\nstderr:\n%s", code, err, stderr)
	}

	_, stderr, err = tryCLI(t, "call", "greet", "--plugins", dir)
	for _, w := range []string{
		`plughost call: no tool named "greet"; available: echo, ok, sleep`,
		"\nplugin nodeish failed, and its tools are missing:\n  start: ",
		"\n  stderr:\n    Error: boom\n        at main (/srv/plugin.js:1:7)",
		"\nplugin p failed, and its tools are missing:\n  start: Unrecognized remote plugin message:",
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("plughost call greet does not say %q:\n%s", w, stderr)
		}
	}
	if code := exitCode(err); code != 1 {
		t.Errorf("plughost call greet exited with %d, want 1", code)
	}
}
