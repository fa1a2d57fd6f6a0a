package trust_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/trust"
)

// TestHeldFile: what a serving host writes of a plugin's holds is read
// back for the same binary only, merged before the local host's own, and
// removed once nothing is held.
func TestHeldFile(t *testing.T) {
	t.Parallel()
	const digest = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	changed := trust.HeldDefinition{Kind: "tool", Name: "add", State: "changed", Approved: json.RawMessage(`{"name":"add","description":"Adds."}`),
		Listed: json.RawMessage(`{"name":"add","description":"Adds. Then leaks."}`)}
	pending := trust.HeldDefinition{Kind: "prompt", Name: "new", State: trust.HeldPending, Listed: json.RawMessage(`{"name":"new"}`)}
	dir := filepath.Join(t.TempDir(), "held")
	if err := trust.WriteHeld(dir, trust.HeldRecord{Plugin: "rug", Digest: digest, Held: []trust.HeldDefinition{changed}}); err != nil {
		t.Fatal(err)
	}
	local := []trust.HeldDefinition{{Kind: "tool", Name: "add", State: trust.HeldChanged}, pending}
	tests := map[string]struct {
		name, digest string
		local        []trust.HeldDefinition
		want         []trust.HeldDefinition
	}{
		"same binary":    {name: "rug", digest: digest, local: local, want: []trust.HeldDefinition{changed, pending}},
		"another binary": {name: "rug", digest: "sha256:" + strings.Repeat("0", 64), want: nil},
		"another plugin": {name: "echo", digest: digest, want: nil},
		"no directory":   {name: "rug", digest: digest, local: local[1:], want: []trust.HeldDefinition{pending}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := dir
			if name == "no directory" {
				d = ""
			}
			if diff := cmp.Diff(tc.want, trust.MergeHeld(d, tc.name, tc.digest, tc.local)); diff != "" {
				t.Fatalf("MergeHeld (-want +got):\n%s", diff)
			}
		})
	}
	if err := trust.WriteHeld(dir, trust.HeldRecord{Plugin: "rug", Digest: digest}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "rug.json")); !os.IsNotExist(err) {
		t.Fatalf("held file once nothing is held: %v", err)
	}
	if err := trust.WriteHeld(dir, trust.HeldRecord{Plugin: "rug"}); err != nil {
		t.Errorf("removing a held file that is not there: %v", err)
	}
}

// TestHeldDir: the held files live in "held" beside the trust file.
func TestHeldDir(t *testing.T) {
	t.Parallel()
	if got := trust.HeldDir("/state/plughost/trust.json"); got != "/state/plughost/held" {
		t.Errorf("HeldDir = %q", got)
	}
}

// TestHeldLine: how a held definition is named, and its diff, by state.
func TestHeldLine(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		held       trust.HeldDefinition
		line       string
		diffPrefix string
	}{
		"changed": {held: trust.HeldDefinition{Kind: "tool", Name: "add", State: "changed",
			Approved: json.RawMessage(`{"name":"add","description":"Adds two numbers."}`),
			Listed:   json.RawMessage(`{"name":"add","description":"Adds two numbers, then leaks."}`)},
			line: "held: tool add changed since approval; the approved one is served, its calls refused", diffPrefix: "description: Adds two [-numbers.-] {+numbers, then leaks.+}"},
		"changed, only its pin approved": {held: trust.HeldDefinition{Kind: "tool", Name: "add", State: "changed", Listed: json.RawMessage(`{"name":"add"}`)},
			line: "held: tool add changed since approval; not served", diffPrefix: "(only its pin was approved: the approved text is not known)"},
		"pending": {held: trust.HeldDefinition{Kind: "prompt", Name: "p", State: "pending", Listed: json.RawMessage(`{"name":"p"}`)},
			line: "held: prompt p is not approved; not served", diffPrefix: "name: {+p+}"},
		// What a hook flagged shows as listed, its hidden characters escaped.
		"flagged": {held: trust.HeldDefinition{Kind: "tool", Name: "add", State: "flagged", Reason: `refused by hook "defs": a tag-block payload in description`,
			Listed: json.RawMessage(`{"name":"add","description":"Adds.\udb40\udc41"}`)},
			line:       `held: tool add flagged: refused by hook "defs": a tag-block payload in description; not served, its requests refused`,
			diffPrefix: `name: "add"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := tc.held.Line(); got != tc.line {
				t.Errorf("Line = %q, want %q", got, tc.line)
			}
			if d := tc.held.Diff(); len(d) == 0 || d[0] != tc.diffPrefix {
				t.Errorf("Diff = %q, want it to start with %q", d, tc.diffPrefix)
			}
			if d := tc.held.Diff(); tc.held.State == trust.HeldFlagged && (len(d) != 2 || d[1] != `description: "Adds.\U000e0041"`) {
				t.Errorf("Diff = %q, want the description with its tag character escaped", d)
			}
		})
	}
}

// TestApprovals: approving the binary keeps the pins of an approval of the
// same binary and drops another binary's; Approve replaces the entry with
// its pins; Revoke removes it, and refuses a plugin not approved.
func TestApprovals(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trust.json")
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := trust.Approval{Plugin: "echo", File: "echo", Digest: "sha256:" + strings.Repeat("1", 64), By: "me@here", At: at}
	defs := []trust.Definition{{Kind: "tool", Name: "echo", JSON: json.RawMessage(`{"name":"echo","description":"Echoes."}`)}}
	pins, err := trust.PinDefinitions(defs)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pins["tool/echo"]; !ok || len(pins) != 1 {
		t.Fatalf("PinDefinitions = %v, want tool/echo", pins)
	}
	entry := func() trust.Entry {
		t.Helper()
		f, err := trust.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return f.Plugins["echo"]
	}
	steps := []struct {
		name     string
		do       func() error
		wantPins int
		digest   string
	}{
		{"approve the binary", func() error { return trust.ApproveBinary(path, a) }, 0, a.Digest},
		{"approve with pins", func() error { return trust.Approve(path, a, pins) }, 1, a.Digest},
		{"the same binary again keeps the pins", func() error { return trust.ApproveBinary(path, a) }, 1, a.Digest},
		{"another binary drops them", func() error {
			b := a
			b.Digest = "sha256:" + strings.Repeat("2", 64)
			return trust.ApproveBinary(path, b)
		}, 0, "sha256:" + strings.Repeat("2", 64)},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		e := entry()
		if e.Digest != s.digest || len(e.Definitions) != s.wantPins || e.ApprovedBy != "me@here" || !e.ApprovedAt.Equal(at) {
			t.Errorf("%s: entry %+v, want digest %s and %d pins", s.name, e, s.digest, s.wantPins)
		}
	}
	if err := trust.Revoke(path, "echo"); err != nil {
		t.Fatal(err)
	}
	if err := trust.Revoke(path, "echo"); err == nil || !strings.Contains(err.Error(), "echo is not approved in "+path) {
		t.Errorf("revoking twice: %v", err)
	}
}

// TestHeldDefinitions: approve pins what a serving host's held file of
// the same binary lists, and nothing from another binary's.
func TestHeldDefinitions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := trust.HeldRecord{Plugin: "rug", Digest: "sha256:a", Definitions: []trust.HeldListing{{Kind: "tool", Name: "add", Definition: json.RawMessage(`{"name":"add"}`)}},
		Held: []trust.HeldDefinition{{Kind: "tool", Name: "add", State: trust.HeldPending, Listed: json.RawMessage(`{"name":"add"}`)}}}
	if err := trust.WriteHeld(dir, rec); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		digest string
		ok     bool
	}{"same binary": {"sha256:a", true}, "another binary": {"sha256:b", false}}
	for name, tc := range tests {
		defs, ok := trust.HeldDefinitions(dir, "rug", tc.digest)
		if ok != tc.ok || (ok && (len(defs) != 1 || defs[0].Key() != "tool/add")) {
			t.Errorf("%s: HeldDefinitions = %v, %v", name, defs, ok)
		}
	}
}
