package pii

import (
	"testing"

	"github.com/plughost/plughost/internal/toolsearcheval"
	"github.com/plughost/plughost/plugins/internal/jsonscan"
)

// The texts of 527 real tool definitions (../shared/toolsearch) are full
// of numbers, versions, DOIs, dates and examples but hold no personal
// data: nothing is found in them. (A DOI was taken for a phone number
// until candidates inside a larger token were left out.)
func TestRealToolTextsHoldNoPersonalData(t *testing.T) {
	data, err := toolsearcheval.Load()
	if err != nil {
		t.Fatalf("the tool corpus (../shared/toolsearch beside the repository): %v", err)
	}
	strings := 0
	for _, s := range data.Servers {
		for _, tool := range s.Tools {
			err := jsonscan.Walk(tool.Def, false, func(st *jsonscan.String) error {
				strings++
				for _, f := range all.Find(st.Value) {
					t.Errorf("%s %s: %s %q", tool.ID, st.Path(), f.Kind, st.Value[f.Start:f.End])
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d strings of %d servers' tools: no personal data found", strings, len(data.Servers))
}
