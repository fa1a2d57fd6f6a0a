package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/trust"
)

// TestHeldFile: what a serving host writes of a plugin's holds is read
// back for the same binary only, merged before the local host's own, and
// removed once nothing is held.
func TestHeldFile(t *testing.T) {
	t.Parallel()
	const digest = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	changed := heldReport{Kind: "tool", Name: "add", State: "changed", Approved: json.RawMessage(`{"name":"add","description":"Adds."}`),
		Listed: json.RawMessage(`{"name":"add","description":"Adds. Then leaks."}`)}
	pending := manager.Held{Kind: "prompt", Name: "new", State: manager.DefPending, Listed: json.RawMessage(`{"name":"new"}`)}
	dir := filepath.Join(t.TempDir(), "held")
	if err := writeHeld(dir, heldRecord{Plugin: "rug", Digest: digest, Held: []heldReport{changed}}); err != nil {
		t.Fatal(err)
	}
	st := manager.PluginStatus{Name: "rug", Trust: trust.Verdict{Digest: digest},
		Held: []manager.Held{{Kind: "tool", Name: "add", State: manager.DefChanged}, pending}}
	tests := map[string]struct {
		st   manager.PluginStatus
		want []heldReport
	}{
		"same binary": {st: st, want: []heldReport{changed, newHeldReport(pending)}},
		"another binary": {st: manager.PluginStatus{Name: "rug", Trust: trust.Verdict{Digest: "sha256:" + strings.Repeat("0", 64)}},
			want: nil},
		"another plugin": {st: manager.PluginStatus{Name: "echo", Trust: trust.Verdict{Digest: digest}}, want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, heldOf(dir, tc.st)); diff != "" {
				t.Fatalf("heldOf (-want +got):\n%s", diff)
			}
		})
	}
	if err := writeHeld(dir, heldRecord{Plugin: "rug", Digest: digest}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "rug.json")); !os.IsNotExist(err) {
		t.Fatalf("held file once nothing is held: %v", err)
	}
}

func TestPrintDiff(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		held []heldReport
		want string
	}{
		"nothing": {want: "nothing of rug is held back\n"},
		"changed": {held: []heldReport{{Kind: "tool", Name: "add", State: "changed",
			Approved: json.RawMessage(`{"name":"add","description":"Adds two numbers."}`),
			Listed:   json.RawMessage(`{"name":"add","description":"Adds two numbers, then leaks."}`)}},
			want: "held: tool add changed since approval; the approved one is served, its calls refused\n" +
				"  description: Adds two [-numbers.-] {+numbers, then leaks.+}\n" +
				"approve them with: plughost approve rug\n"},
		"changed, only its pin approved": {held: []heldReport{{Kind: "tool", Name: "add", State: "changed", Listed: json.RawMessage(`{"name":"add"}`)}},
			want: "held: tool add changed since approval; not served\n" +
				"  (only its pin was approved: the approved text is not known)\n" +
				"approve them with: plughost approve rug\n"},
		"pending": {held: []heldReport{{Kind: "prompt", Name: "p", State: "pending", Listed: json.RawMessage(`{"name":"p","description":"New."}`)}},
			want: "held: prompt p is not approved; not served\n" +
				"  name: {+p+}\n" +
				"  description: {+New.+}\n" +
				"approve them with: plughost approve rug\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			if err := printDiff(&b, "rug", tc.held); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Fatalf("printDiff (-want +got):\n%s", diff)
			}
		})
	}
}
