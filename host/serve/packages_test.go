package serve

import (
	"os"
	"path/filepath"
	"testing"

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
	tests := map[string]struct {
		name, path string
		allow      map[string]string
		asked      string // the digest the wrapped check is asked about; "" when not asked
		state      trust.State
	}{
		"declared package, not installed": {name: "notes", path: npx, asked: notInstalled, state: trust.StatePending},
		"declared, no package runner":     {name: "plain", path: node, asked: file, state: trust.StatePending},
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
