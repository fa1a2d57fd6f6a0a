package poison

import (
	"testing"

	"github.com/plughost/plughost/internal/toolsearcheval"
	"github.com/plughost/plughost/plugins/internal/jsonscan"
)

// realToolFindings scans the 527 real tools of ../shared/toolsearch
// (LiveMCPBench's servers) and returns the findings by tool id.
func realToolFindings(t *testing.T) (map[string][]Finding, int) {
	t.Helper()
	data, err := toolsearcheval.Load()
	if err != nil {
		t.Fatalf("the tool corpus (../shared/toolsearch beside the repository): %v", err)
	}
	out := map[string][]Finding{}
	n := 0
	for _, s := range data.Servers {
		for _, tool := range s.Tools {
			n++
			found, err := Scanner{}.Scan(tool.Def)
			if err != nil {
				t.Fatalf("%s: %v", tool.ID, err)
			}
			if len(found) > 0 {
				out[tool.ID] = found
			}
		}
	}
	return out, n
}

// The prefilter skips only patterns that could not have matched: on
// every string of the real tools and of the poisoned set, the checks it
// reports are those the patterns' own regular expressions find.
func TestPrefilterChangesNoMatch(t *testing.T) {
	data, err := toolsearcheval.Load()
	if err != nil {
		t.Fatal(err)
	}
	var defs [][]byte
	for _, s := range data.Servers {
		for _, tool := range s.Tools {
			defs = append(defs, tool.Def)
		}
	}
	for _, c := range loadPoisoned(t) {
		defs = append(defs, c.Definition)
	}
	strings := 0
	for _, def := range defs {
		err := jsonscan.Walk(def, true, func(s *jsonscan.String) error {
			strings++
			folded := fold(s.Value)
			hits := map[int]bool{}
			for _, h := range patternSet.Match(folded) {
				hits[h.Expr] = true
			}
			for i, p := range patterns {
				if p.re.MatchString(folded) != hits[i] {
					t.Errorf("%s on %.80q: regexp %v, prefiltered %v", p.check, folded, p.re.MatchString(folded), hits[i])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d strings of %d definitions: the prefilter changed no match", strings, len(defs))
}
