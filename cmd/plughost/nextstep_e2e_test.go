package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/serve"
)

// runCLIIn runs plughost with args in the environment env (added to
// this process's), as one of a user's successive commands.
func runCLIIn(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(bin.plughost, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// xdgEnv is the environment of one user's successive commands: their
// own data, cache and state directories.
func xdgEnv(t *testing.T) []string {
	return []string{"XDG_DATA_HOME=" + t.TempDir(), "XDG_CACHE_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
}

// writeServerDecl writes the declared server NAME.mcp.json into dir.
func writeServerDecl(t *testing.T, dir, name string, decl map[string]any) {
	t.Helper()
	b, err := json.Marshal(decl)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".mcp.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A declared server that gives up at start shows why where the user looks
// (issue 29): `plughost plugins` shows its exit, the last lines of its
// stderr and the one next step — the directory to grant to a server that
// cannot read it (the sandbox hides it), the allow_net to add for a node
// server without network whose name lookup fails for real (EAI_AGAIN in
// its empty network namespace) — and not the go-plugin hint meant for
// plugin authors. The log says the same, next step included; --json too.
func TestPluginsShowsWhyADeclaredServerFailed(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	docs := t.TempDir() // exists here; the sandbox lays a tmpfs over /tmp
	writeServerDecl(t, dir, "docs", map[string]any{"command": "/bin/sh", "args": []string{"-c",
		fmt.Sprintf(`cd %s || { echo "Cannot access directory %s" >&2; exit 1; }`, docs, docs)}})
	writeServerDecl(t, dir, "mem", map[string]any{"command": node, "args": []string{"-e",
		`require("dns").lookup("registry.npmjs.org", (err) => { console.error(String(err)); process.exit(3) })`}})

	stdout, stderr, err := runCLIIn(t, xdgEnv(t), "plugins", "--plugins", dir)
	if code := exitCode(err); code != 1 {
		t.Errorf("plughost plugins exited with %d (%v), want 1\nstderr:\n%s", code, err, stderr)
	}
	for _, w := range []string{
		`(?m)^docs +failed +exited while starting: exit status 1$`,
		`(?m)^    stderr of docs:\n(      .*\n)*      Cannot access directory ` + regexp.QuoteMeta(docs) + `\n`,
		`(?m)^    next step: add allow_read = \["` + regexp.QuoteMeta(docs) + `"\] to plugin "docs" in the sandbox block$`,
		`(?m)^mem +failed +exited while starting: exit status 3$`,
		`(?m)^    stderr of mem:\n      Error: getaddrinfo EAI_AGAIN registry\.npmjs\.org\n`,
		`(?m)^    next step: add allow_net = \["registry\.npmjs\.org:443"\] \(or "all"\) to plugin "mem" in the sandbox block: it has no network, and it tried to reach registry\.npmjs\.org$`,
	} {
		if !regexp.MustCompile(w).MatchString(stdout) {
			t.Errorf("plughost plugins does not show %s:\n%s", w, stdout)
		}
	}
	for _, unwanted := range []string{"must be a plughost plugin", "go-plugin", "Unrecognized remote plugin message"} {
		if strings.Contains(stdout+stderr, unwanted) {
			t.Errorf("plughost plugins says %q of a declared server:\n%s\n%s", unwanted, stdout, stderr)
		}
	}
	if !regexp.MustCompile(`\[ERROR\] plughost\.plugins: plugin failed to load; .*plugin=mem .*EAI_AGAIN.* next_step=".*add allow_net = \[\\"registry\.npmjs\.org:443\\"\]`).MatchString(stderr) {
		t.Errorf("the log does not give mem's failure with the allow_net step:\n%s", stderr)
	}

	stdout, _, _ = runCLIIn(t, xdgEnv(t), "plugins", "--json", "--plugins", dir)
	var r serve.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("no JSON report: %v\n%s", err, stdout)
	}
	steps := map[string]string{}
	for _, p := range r.Plugins {
		steps[p.Name] = p.NextStep
		if !p.Failed || !strings.HasPrefix(p.Error, "exited while starting: ") || p.Stderr == "" {
			t.Errorf("%s in the report: %+v", p.Name, p)
		}
	}
	if !strings.HasPrefix(steps["mem"], `add allow_net = ["registry.npmjs.org:443"]`) || steps["docs"] != fmt.Sprintf(`add allow_read = [%q] to plugin "docs" in the sandbox block`, docs) {
		t.Errorf("nextStep in the report: %q", steps)
	}
}

// A declared server that never answers initialize fails at its start
// limit, which the error names with its setting; the stderr it wrote so
// far comes with it, and the next step is to raise the limit.
func TestDeclaredServerStartTimeoutNamesItsSetting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// It reads the client's messages and answers none. Its limit leaves
	// a loaded machine time to start it and take its stderr line.
	writeServerDecl(t, dir, "mute", map[string]any{"command": "/bin/sh", "args": []string{"-c",
		`echo "npm warn exec The following package was not found and will be installed" >&2; while read -r line; do :; done`}})
	config := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(config, []byte("plugins {\n  plugin \"mute\" {\n    start_timeout = \"5s\"\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runCLIIn(t, xdgEnv(t), "plugins", "--plugins", dir, "--config", config)
	if code := exitCode(err); code != 1 {
		t.Errorf("plughost plugins exited with %d (%v), want 1\nstderr:\n%s", code, err, stderr)
	}
	for _, w := range []string{
		`(?m)^mute +failed +the server did not answer initialize and list what it offers within 5s \(start_timeout in the plugins block\)$`,
		`(?m)^    stderr of mute:\n      npm warn exec The following package was not found and will be installed$`,
		`(?m)^    next step: .*start_timeout = "2m" in plugin "mute" of the plugins block$`,
	} {
		if !regexp.MustCompile(w).MatchString(stdout) {
			t.Errorf("plughost plugins does not show %s:\n%s", w, stdout)
		}
	}
}

// A failing server's ERROR is logged once per change, not on every
// command: two calls of a healthy tool while another server fails log
// it whole once (the second says in one line that it still fails), and
// `plughost plugins` still shows all of it.
func TestCallLogsAFailureOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyPlugin(t, "echo", dir, "echo")
	writeServerDecl(t, dir, "docs", map[string]any{"command": "/bin/sh", "args": []string{"-c",
		`echo "Cannot access directory /srv/docs" >&2; exit 1`}})
	env := xdgEnv(t)
	errorLine := regexp.MustCompile(`(?m)^\S+ \[ERROR\] .*plugin=docs`)
	var logged int
	for i := range 2 {
		stdout, stderr, err := runCLIIn(t, env, "call", "echo", "--plugins", dir, "--args", `{"text":"hi"}`)
		if err != nil || strings.TrimSpace(stdout) != "hi" {
			t.Fatalf("call %d: %v, stdout %q\nstderr:\n%s", i+1, err, stdout, stderr)
		}
		n := len(errorLine.FindAllString(stderr, -1))
		logged += n
		if i == 1 && !strings.Contains(stderr, "plugin failed to load; it will be retried when its file changes, as when last logged") {
			t.Errorf("the second call does not say in one line that docs still fails:\n%s", stderr)
		}
	}
	if logged != 1 {
		t.Errorf("docs's failure was logged at ERROR %d times in two calls, want once", logged)
	}
	stdout, _, _ := runCLIIn(t, env, "plugins", "--plugins", dir)
	if !regexp.MustCompile(`(?m)^docs +failed +exited while starting: exit status 1\n    stderr of docs:\n      Cannot access directory /srv/docs$`).MatchString(stdout) {
		t.Errorf("plughost plugins no longer shows the failure whole:\n%s", stdout)
	}
}

// fetchServer is a node MCP server over stdio whose one tool, fetch,
// looks up a host name: without network the lookup fails, and the tool
// answers with the error, as a fetch or API server does.
const fetchServer = `
const rl = require("readline").createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === "initialize") return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "fetch", version: "1" } } });
  if (m.method === "tools/list") return send({ jsonrpc: "2.0", id: m.id, result: { tools: [{ name: "fetch", inputSchema: { type: "object" } }] } });
  if (m.method === "tools/call") return require("dns").lookup("api.github.com", (err) =>
    send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: String(err) }], isError: !!err } }));
  send({ jsonrpc: "2.0", id: m.id, result: {} });
});`

// A server without network that starts well and fails only when a call
// reaches out gets, in plughost's log, the allow_net to add (issue 29).
func TestCallWithoutNetworkLogsTheAllowNetStep(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	writeServerDecl(t, dir, "fetch", map[string]any{"command": node, "args": []string{"-e", fetchServer}})
	stdout, stderr, err := runCLIIn(t, xdgEnv(t), "call", "fetch", "--plugins", dir)
	if code := exitCode(err); code != 1 || !strings.Contains(stdout, "getaddrinfo EAI_AGAIN api.github.com") {
		t.Errorf("plughost call fetch: exit %d, stdout %q; want the tool's error\nstderr:\n%s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`\[WARN\]  plughost\.plugins: a tool call failed for a reason the operator can fix: plugin=fetch tool=fetch .*next_step=".*add allow_net = \[\\"api\.github\.com:443\\"\]`).MatchString(stderr) {
		t.Errorf("the log does not give the allow_net step:\n%s", stderr)
	}
}
