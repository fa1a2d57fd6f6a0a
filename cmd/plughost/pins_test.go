package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/trust"
)

// TestPrintDiff: each held definition, its line and its diff, then how to
// approve them (the held store's rules are host/trust's, tested there).
func TestPrintDiff(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		held []trust.HeldDefinition
		want string
	}{
		"nothing": {want: "nothing of rug is held back\n"},
		"changed": {held: []trust.HeldDefinition{{Kind: "tool", Name: "add", State: "changed",
			Approved: json.RawMessage(`{"name":"add","description":"Adds two numbers."}`),
			Listed:   json.RawMessage(`{"name":"add","description":"Adds two numbers, then leaks."}`)}},
			want: "held: tool add changed since approval; the approved one is served, its calls refused\n" +
				"  description: Adds two [-numbers.-] {+numbers, then leaks.+}\n" +
				"approve them with: plughost approve rug\n"},
		"changed, only its pin approved": {held: []trust.HeldDefinition{{Kind: "tool", Name: "add", State: "changed", Listed: json.RawMessage(`{"name":"add"}`)}},
			want: "held: tool add changed since approval; not served\n" +
				"  (only its pin was approved: the approved text is not known)\n" +
				"approve them with: plughost approve rug\n"},
		"pending": {held: []trust.HeldDefinition{{Kind: "prompt", Name: "p", State: "pending", Listed: json.RawMessage(`{"name":"p","description":"New."}`)}},
			want: "held: prompt p is not approved; not served\n" +
				"  name: {+p+}\n" +
				"  description: {+New.+}\n" +
				"approve them with: plughost approve rug\n"},
		// What a hook flagged: its reason, its text as listed with hidden
		// characters escaped; no approval serves it.
		"flagged": {held: []trust.HeldDefinition{{Kind: "tool", Name: "add", State: "flagged", Reason: `refused by hook "defs": invisible tag characters in description`,
			Listed: json.RawMessage(`{"name":"add","description":"Adds.\u200b"}`)}},
			want: `held: tool add flagged: refused by hook "defs": invisible tag characters in description; not served, its requests refused` + "\n" +
				`  name: "add"` + "\n" +
				`  description: "Adds.\u200b"` + "\n" +
				"a flagged definition is served once the hooks pass it\n"},
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
