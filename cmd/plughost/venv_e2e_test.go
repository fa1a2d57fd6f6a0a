package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A console script of a Python virtual environment declared as a server,
// with the venv granted too (allow_read): the script lies in a directory
// the sandbox puts back, and comes back with it. Putting it back on its
// own failed inside the read-only venv, and the sandbox stage then hung
// before exec (Started never returned).
func TestDeclaredServerInGrantedVenv(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil { // as root the server runs as uid 65534
		t.Fatal(err)
	}
	venv := filepath.Join(base, "venv")
	if out, err := exec.Command("python3", "-m", "venv", venv).CombinedOutput(); err != nil {
		t.Fatalf("the venv test needs python3 with venv (python3-venv): %v\n%s", err, out)
	}
	script := filepath.Join(venv, "bin", "hello-py")
	if err := os.WriteFile(script, []byte("#!"+venv+"/bin/python3\n"+helloPy+"\nmain()\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	declare(t, dir, "hellopy", map[string]any{"command": script, "args": []string{"venv"}})
	config := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(config, []byte(`sandbox {
  plugin "hellopy" {
    allow_read = ["`+venv+`"]
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := serveWrappedStdio(t, dir, config)
	c.awaitTool(t, "hello_py")
	if got := c.call(t, "hello_py", nil); got != "hello venv from python" {
		t.Fatalf("hello_py = %q", got)
	}
}
