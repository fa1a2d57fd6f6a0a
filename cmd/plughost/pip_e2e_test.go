package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// Install once for Python: a declared `uvx hello-mcp==1.0.0 world`
// against a package index in PEP 503's "simple" layout that this test
// serves, with a wheel it builds.

// helloPy is a small MCP stdio server in Python's standard library only.
const helloPy = `import json, sys

def main():
    for line in sys.stdin:
        m = json.loads(line)
        if "id" not in m:
            continue
        if m["method"] == "initialize":
            r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "hello-py", "version": "1.0.0"}}
        elif m["method"] == "tools/list":
            r = {"tools": [{"name": "hello_py", "description": "Says hello", "inputSchema": {"type": "object"}}]}
        elif m["method"] == "tools/call":
            r = {"content": [{"type": "text", "text": "hello " + " ".join(sys.argv[1:]) + " from python"}]}
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no " + m["method"]}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
`

// buildWheel builds a pure-Python wheel (PEP 427) of the distribution
// name at version holding files, with one console script, script, running
// entry ("module:function").
func buildWheel(t *testing.T, name, version string, files map[string]string, script, entry string) (file string, body []byte) {
	t.Helper()
	dist := strings.ReplaceAll(name, "-", "_")
	info := dist + "-" + version + ".dist-info/"
	all := map[string]string{
		info + "METADATA":         "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n",
		info + "WHEEL":            "Wheel-Version: 1.0\nGenerator: plughost-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		info + "entry_points.txt": "[console_scripts]\n" + script + " = " + entry + "\n",
	}
	for k, v := range files {
		all[k] = v
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for path, content := range all {
		w, err := zw.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
		sum := sha256.Sum256([]byte(content))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", path, base64.RawURLEncoding.EncodeToString(sum[:]), len(content))
	}
	record.WriteString(info + "RECORD,,\n")
	w, err := zw.Create(info + "RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return dist + "-" + version + "-py3-none-any.whl", buf.Bytes()
}

// simpleIndex serves wheels in PEP 503's layout (/simple/NAME/ links
// each file with its #sha256=), and counts the requests it answers.
type simpleIndex struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string
}

func serveIndex(t *testing.T, project string, wheels map[string][]byte) *simpleIndex {
	t.Helper()
	idx := &simpleIndex{}
	idx.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		idx.mu.Lock()
		idx.requests = append(idx.requests, r.URL.Path)
		idx.mu.Unlock()
		switch {
		case r.URL.Path == "/simple/"+project+"/":
			fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
			for file, body := range wheels {
				sum := sha256.Sum256(body)
				fmt.Fprintf(w, "<a href=\"/files/%s#sha256=%s\">%s</a>\n", file, hex.EncodeToString(sum[:]), file)
			}
			fmt.Fprint(w, "</body></html>\n")
		case strings.HasPrefix(r.URL.Path, "/files/"):
			body, ok := wheels[strings.TrimPrefix(r.URL.Path, "/files/")]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Write(body)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(idx.Close)
	return idx
}

func (idx *simpleIndex) count() int {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	return len(idx.requests)
}

// TestPackageUvx: the first start installs the wheel into a venv of the
// server's own with pip --require-hashes from the index; the second asks
// the index nothing. A distribution the index lacks fails with pip's
// words.
func TestPackageUvx(t *testing.T) {
	t.Parallel()
	if err := exec.Command("python3", "-m", "venv", "--help").Run(); err != nil {
		t.Fatalf("the uvx test needs python3 with venv (python3-venv): %v", err)
	}
	file, body := buildWheel(t, "hello-mcp", "1.0.0", map[string]string{"hello_mcp/__init__.py": "", "hello_mcp/server.py": helloPy},
		"hello-mcp", "hello_mcp.server:main")
	idx := serveIndex(t, "hello-mcp", map[string][]byte{file: body})
	dir, state := t.TempDir(), t.TempDir()
	declare(t, dir, "hellopy", map[string]any{"command": "uvx", "args": []string{"hello-mcp==1.0.0", "world"}})
	env := []string{"XDG_STATE_HOME=" + state, "PIP_INDEX_URL=" + idx.URL + "/simple/", "PIP_CERT="}

	c := serveWrappedStdio(t, dir, "", env...)
	c.stderr.awaitWithin(t, "installed hello-mcp==1.0.0 in ", installWait)
	c.awaitTool(t, "hello_py")
	if got := c.call(t, "hello_py", nil); got != "hello world from python" {
		t.Fatalf("hello_py = %q", got)
	}
	c.stderr.await(t, "installing hello-mcp==1.0.0 (1 distribution)…")
	asked := idx.count()
	c.cs.Close()

	c = serveWrappedStdio(t, dir, "", env...)
	c.awaitTool(t, "hello_py")
	if got := c.call(t, "hello_py", nil); got != "hello world from python" {
		t.Fatalf("hello_py at the second start = %q", got)
	}
	if n := idx.count(); n != asked {
		t.Errorf("the second start asked the index %d more times", n-asked)
	}
	c.cs.Close()

	declare(t, dir, "nope", map[string]any{"command": "uvx", "args": []string{"nope-mcp"}})
	out, code := plughostWith(t, env, "plugins", "--plugins", dir)
	if code != 1 || !strings.Contains(out, "ERROR: No matching distribution found for nope-mcp") {
		t.Fatalf("a distribution the index does not have (exit %d):\n%s", code, out)
	}
}
