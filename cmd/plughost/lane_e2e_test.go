package main

import (
	"regexp"
	"strings"
	"testing"
)

// describedLine is the manager's debug line saying where a plugin's calls
// go, once it described itself.
func describedLine(t *testing.T, stderr, plugin string) string {
	t.Helper()
	for line := range strings.SplitSeq(stderr, "\n") {
		if strings.Contains(line, "plugin described") && strings.Contains(line, "plugin="+plugin) {
			return line
		}
	}
	t.Fatalf("no line says how plugin %s was described:\n%s", plugin, stderr)
	return ""
}

// A sandboxed plugin of the Go SDK takes the frame lane the host hands
// it through the sandbox stage, and its calls (with progress) go there;
// PLUGHOST_LANE=off keeps them on gRPC.
func TestCallsOnTheFrameLane(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, env, want string
	}{
		{"lane", "", `calls="frame lane"`},
		{"off", "PLUGHOST_LANE=off", "calls=gRPC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			copyPlugin(t, "echo", dir, "echo")
			var env []string
			if tc.env != "" {
				env = append(env, tc.env)
			}
			h := startTestHostIn(t, dir, nil, env...)
			h.awaitTools("echo", "sleep")
			res := h.call("echo", map[string]any{"text": strings.Repeat("lane ", 30000)}) // arguments in chunks
			if res.IsError || text(res) != strings.Repeat("lane ", 30000) {
				t.Errorf("echo of 150 KB: isError %v, %d bytes back", res.IsError, len(text(res)))
			}
			if line := describedLine(t, h.stderr.String(), "echo"); !strings.Contains(line, tc.want) {
				t.Errorf("the plugin's calls: %s, want %s", line, tc.want)
			}
			started := regexp.MustCompile(`plugin started: plugin=echo pid=\d+ sandbox=(\S*)`).FindStringSubmatch(h.stderr.String())
			if started == nil || started[1] == "" {
				t.Errorf("the plugin did not run sandboxed: %q", started)
			}
		})
	}
}

// The wrapper serving a declared server is a plugin of the Go SDK: its
// calls go on the frame lane too.
func TestWrappedServerOnTheFrameLane(t *testing.T) {
	t.Parallel()
	script, node := referenceServer(t, "server-everything")
	dir := t.TempDir()
	declare(t, dir, "everything", map[string]any{"command": node, "args": []string{script, "stdio"}})
	c := serveWrappedStdio(t, dir, "")
	c.awaitTool(t, "get-sum")
	if got := c.call(t, "get-sum", map[string]any{"a": 2, "b": 3}); !strings.Contains(got, "5") {
		t.Errorf("get-sum = %q", got)
	}
	if line := describedLine(t, c.stderr.String(), "everything"); !strings.Contains(line, `calls="frame lane"`) {
		t.Errorf("the wrapped server's calls: %s, want them on the frame lane", line)
	}
}
