package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failed handshake of a "#!" script names its interpreter and the
// runtime preset that lets it start; a file that is not a script is left
// to the manager's explanation.
func TestScriptHint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, c := range map[string]struct {
		content string
		want    []string // nil: no hint
	}{
		"binary": {"\x7fELF\x02\x01", nil},
		"node through env": {"#!/usr/bin/env node\n", []string{
			"is a script run by node (through /usr/bin/env)",
			`give the plugin the node preset, sandbox { plugin "hello" { runtime = "node" } }, if it has none`,
			"handshake line (1|2|unix|/path/to.sock|grpc) first on stdout"}},
		"node by path": {"#!/opt/node-v22/bin/node --no-warnings\n", []string{
			"is a script run by /opt/node-v22/bin/node:", `runtime = "node"`}},
		"python":                          {"#!/usr/bin/python3.11\n", []string{"run by /usr/bin/python3.11:", `{ runtime = "python" }`}},
		"env -S python":                   {"#!/usr/bin/env -S python3 -u\n", []string{"run by python3 (through /usr/bin/env)", `runtime = "python"`}},
		"python2, which no preset grants": {"#!/usr/bin/python2\n", []string{"run by /usr/bin/python2: in the sandbox its interpreter, and every program it starts, must be readable"}},
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
			got := scriptHint("hello", path)
			if c.want == nil {
				if got != "" {
					t.Errorf("scriptHint = %q, want none for a file that is not a script", got)
				}
				return
			}
			if !strings.HasPrefix(got, "("+path+" ") {
				t.Errorf("scriptHint = %q, want it to start with the path", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("scriptHint = %q\nwant it to contain %q", got, w)
				}
			}
		})
	}
}
