package manager

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A failed handshake of a "#!" script names its interpreter and the
// runtime preset that lets it start; a binary is told what it must be.
func TestDiagnose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, c := range map[string]struct {
		content string
		want    []string
	}{
		"binary": {"\x7fELF\x02\x01", []string{"must be a plughost plugin built for " + runtime.GOOS + "/" + runtime.GOARCH}},
		"node through env": {"#!/usr/bin/env node\n", []string{
			"is a script run by node (through /usr/bin/env)",
			`give the plugin the node preset, sandbox { plugin "hello" { runtime = "node" } }, if it has none`,
			"handshake line (1|2|unix|/path/to.sock|grpc) first on stdout"}},
		"node by path": {"#!/opt/node-v22/bin/node --no-warnings\n", []string{
			"is a script run by /opt/node-v22/bin/node:", `runtime = "node"`}},
		"python":        {"#!/usr/bin/python3.11\n", []string{"run by /usr/bin/python3.11:", `{ runtime = "python" }`}},
		"env -S python": {"#!/usr/bin/env -S python3 -u\n", []string{"run by python3 (through /usr/bin/env)", `runtime = "python"`}},
		"launcher": {"#!/bin/sh\nexec node main.mjs\n", []string{
			"is a script run by /bin/sh: in the sandbox its interpreter, and every program it starts, must be readable",
			`runtime = "node" or "python" in sandbox { plugin "hello" { ... } }, anything else allow_read`}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
			if err := os.WriteFile(path, []byte(c.content), 0o755); err != nil {
				t.Fatal(err)
			}
			got := diagnose("hello", path)
			if !strings.HasPrefix(got, "("+path+" ") {
				t.Errorf("diagnose = %q, want it to start with the path", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("diagnose = %q\nwant it to contain %q", got, w)
				}
			}
			if name != "binary" && strings.Contains(got, "built for") {
				t.Errorf("a script is told it must be built for a platform: %q", got)
			}
		})
	}
}
