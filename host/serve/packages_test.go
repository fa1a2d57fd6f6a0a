package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/packages"
	"github.com/plughost/plughost/host/trust"
)

// checkedTrust is the trust check packageTrust wraps: it says pending,
// and remembers the digest it was asked about.
type checkedTrust struct {
	manager.Trust
	asked *string
}

func (c checkedTrust) Check(name, path, digest string) trust.Verdict {
	*c.asked = digest
	return trust.Verdict{Mode: trust.ModePinned, State: trust.StatePending, Digest: digest}
}

// TestPackageTrust: a declared server that installs a package is checked
// with the digest that covers its declaration and its tree (not
// installed yet: packages.Digest of none); a plugin binary with its own;
// Options.Allow lets one digest run whatever the trust file says, and
// only that one.
func TestPackageTrust(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	npx := write("notes.mcp.json", `{"command": "npx", "args": ["-y", "@acme/notes-mcp@1.2.3"]}`)
	node := write("plain.mcp.json", `{"command": "node", "args": ["server.js"]}`)
	remote := write("remote.mcp.json", `{"type": "http", "url": "https://api.example.com/mcp"}`)
	binary := write("echo", "#!/bin/sh\n")
	const file = "sha256:" + "ab"
	notInstalled, err := packages.Digest(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A local server's digest covers the program its command names, node
	// here (issue 31): not the declaration's alone.
	plain, _, ok := declaredIdentity("plain", node, file)
	if !ok || plain == file {
		t.Fatalf("a local declared server's digest is %q, the declaration's alone", plain)
	}
	tests := map[string]struct {
		name, path string
		allow      map[string]string
		asked      string // the digest the wrapped check is asked about; "" when not asked
		state      trust.State
	}{
		"declared package, not installed": {name: "notes", path: npx, asked: notInstalled, state: trust.StatePending},
		"declared, no package runner":     {name: "plain", path: node, asked: plain, state: trust.StatePending},
		"declared remote server":          {name: "remote", path: remote, asked: file, state: trust.StatePending},
		"a binary":                        {name: "echo", path: binary, asked: file, state: trust.StatePending},
		"allowed, this digest":            {name: "notes", path: npx, allow: map[string]string{"notes": notInstalled}, state: trust.StateApproved},
		"allowed, another digest":         {name: "notes", path: npx, allow: map[string]string{"notes": file}, asked: notInstalled, state: trust.StatePending},
	}
	for name, tc := range tests {
		var asked string
		v := packageTrust{Trust: checkedTrust{asked: &asked}, allow: tc.allow}.Check(tc.name, tc.path, file)
		if asked != tc.asked || v.State != tc.state {
			t.Errorf("%s: asked about %q, state %s; want %q, %s", name, asked, v.State, tc.asked, tc.state)
		}
	}
	for path, want := range map[string]bool{npx: true, node: false, remote: false, binary: false} {
		if got := PackageSpec(path) != nil; got != want {
			t.Errorf("PackageSpec(%s) != nil is %v, want %v", filepath.Base(path), got, want)
		}
	}
}

// TestDeclaredProgramIsPinned (issue 31, attack 3): the digest of a
// declared server covers the program its command names; replacing that
// program after approval makes the pinned check find it changed, and its
// reason names the part that changed, the program's digest old → new.
func TestDeclaredProgramIsPinned(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir, bin := t.TempDir(), t.TempDir()
	prog := filepath.Join(bin, "srv")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho approved\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	decl := filepath.Join(dir, "srv.mcp.json")
	if err := os.WriteFile(decl, []byte(`{"command": "`+prog+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	trustFile := filepath.Join(t.TempDir(), "trust.json")
	digest, parts, err := PluginDigest("srv", decl)
	if err != nil {
		t.Fatal(err)
	}
	approved, _ := trust.Digest(prog)
	if parts["program"] != prog+" "+approved {
		t.Fatalf("parts %v: want the program %s %s", parts, prog, approved)
	}
	if err := trust.Approve(trustFile, trust.Approval{Plugin: "srv", Digest: digest, Parts: parts, At: time.Now()}, nil); err != nil {
		t.Fatal(err)
	}
	checker, err := trust.New(&trust.Options{Mode: trust.ModePinned, File: trustFile})
	if err != nil {
		t.Fatal(err)
	}
	pt := packageTrust{Trust: checker}
	fileDigest, _ := trust.Digest(decl)
	if v := pt.Check("srv", decl, fileDigest); v.State != trust.StateApproved {
		t.Fatalf("approved server: %+v", v)
	}

	next := filepath.Join(bin, ".srv.new")
	if err := os.WriteFile(next, []byte("#!/bin/sh\necho replaced\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, prog); err != nil {
		t.Fatal(err)
	}
	replaced, _ := trust.Digest(prog)
	v := pt.Check("srv", decl, fileDigest)
	want := "what changed: program: " + prog + " " + approved + " → " + prog + " " + replaced
	if v.State != trust.StateChanged || !strings.Contains(v.Reason, want) {
		t.Fatalf("replaced program: %+v; want changed, saying %q", v, want)
	}
}
