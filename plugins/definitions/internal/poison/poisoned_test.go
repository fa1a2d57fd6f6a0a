package poison

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// poisonedCase is one definition of testdata/poisoned.json, written from
// published tool-poisoning research (testdata/README.md names each
// source), with the checks it must trip.
type poisonedCase struct {
	ID, Source, Kind string
	Expect           []Check
	Definition       json.RawMessage
}

func loadPoisoned(t testing.TB) []poisonedCase {
	t.Helper()
	b, err := os.ReadFile("testdata/poisoned.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []poisonedCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// Every poisoned definition is caught, by every check it was written to
// trip.
func TestEveryPoisonedDefinitionIsCaught(t *testing.T) {
	cases := loadPoisoned(t)
	if len(cases) < 20 {
		t.Fatalf("only %d poisoned definitions", len(cases))
	}
	for _, c := range cases {
		found, err := Scanner{}.Scan(c.Definition)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		var got []Check
		for _, f := range found {
			got = append(got, f.Check)
		}
		for _, want := range c.Expect {
			if !slices.Contains(got, want) {
				t.Errorf("%s (%s): %s not found; found %v", c.ID, c.Source, want, found)
			}
		}
		if len(found) > 0 {
			t.Logf("%s: %s", c.ID, Reason(found))
		}
	}
}

// toleratedFalsePositives are the real tools of ../shared/toolsearch the
// scanner flags although they are not poisoned, each with why. The test
// fails on a new false positive and on one that is gone, so this list,
// the README's and the scanner stay in step.
var toleratedFalsePositives = map[string]string{}

func TestFalsePositivesOnRealTools(t *testing.T) {
	found, n := realToolFindings(t)
	var ids []string
	for id := range found {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	t.Logf("%d real tools scanned, %d flagged (%.1f%%)", n, len(ids), 100*float64(len(ids))/float64(n))
	for _, id := range ids {
		var s []string
		for _, f := range found[id] {
			s = append(s, f.String())
		}
		t.Logf("flagged %s: %s", id, strings.Join(s, "; "))
		if _, ok := toleratedFalsePositives[id]; !ok {
			t.Errorf("%s is flagged and not a tolerated false positive: %s", id, strings.Join(s, "; "))
		}
	}
	for id := range toleratedFalsePositives {
		if _, ok := found[id]; !ok {
			t.Errorf("%s is listed as a tolerated false positive but no longer flagged: remove it", id)
		}
	}
}
