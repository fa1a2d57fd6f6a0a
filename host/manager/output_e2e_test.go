package manager

import (
	"path/filepath"
	"strings"
	"testing"
)

// What a plugin writes after the go-plugin handshake, however it writes it
// (fmt.Println and fmt.Fprintln(os.Stderr), which go-plugin carries over
// its stdio stream; log.Printf, which writes to file descriptor 2; straight
// to descriptors 1 and 2), is logged under the plugin's name at INFO, one
// entry per line (issue 20).
func TestPluginOutputIsLogged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	h := start(t, dir, Options{})
	e := h.expect("set", "tp")
	if got := mustCall(t, e.p, "print", ""); got != "printed" {
		t.Fatalf("print = %q", got)
	}
	for _, how := range []string{"fmt.Println", "fmt.Fprintln(os.Stderr)", "log.Printf", "fd 1", "fd 2"} {
		entry := h.logs.await(t, "test.tp", "print: "+how)
		if entry["@level"] != "info" {
			t.Errorf("%s: logged %v, want it at info", how, entry)
		}
	}
}

// A plugin that fails with a long stderr keeps its head (a Node.js
// exception's first line) and its tail in LastError and LastStderr.
func TestLoadErrorKeepsStderrHeadAndTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScript(t, filepath.Join(dir, "node"), `echo "/srv/plugin.js:1" >&2
echo "Error: boom" >&2
i=0
while [ $i -lt 200 ]; do echo "    at frame $i (/srv/node_modules/a/rather/long/path/to/index.js:$i:17)" >&2; i=$((i+1)); done
echo "Node.js v22" >&2
exit 1`)
	h := start(t, dir, Options{})
	h.ready()
	st := h.status("node")
	if st.State != StateFailed {
		t.Fatalf("status = %+v, want failed", st)
	}
	for _, want := range []string{"Error: boom", "at frame 199", "Node.js v22", " bytes elided …"} {
		if !strings.Contains(st.LastStderr, want) {
			t.Errorf("LastStderr lacks %q:\n%s", want, st.LastStderr)
		}
	}
	if strings.Contains(st.LastError, "Error: boom") {
		t.Errorf("LastError repeats the stderr that LastStderr holds:\n%s", st.LastError)
	}
	if len(st.LastStderr) > excerptHead+excerptTail+50 {
		t.Errorf("LastStderr is %d bytes", len(st.LastStderr))
	}
}
