package prefilter

import (
	"slices"
	"strings"
	"testing"
)

func TestWordsAreReadOffTheSyntax(t *testing.T) {
	s, err := Compile([]string{`\b(ignore|disregard) (previous|prior) instructions`, `\b(the )?(app|system) will crash\b|[0-9]{3,}`})
	if err != nil {
		t.Fatal(err)
	}
	// the second expression's second branch has no words: it always runs
	if len(s.always) != 1 || s.branches[s.always[0]].expr != 1 {
		t.Fatalf("always %v", s.always)
	}
	for _, c := range []struct {
		text string
		want []int
	}{
		{"please ignore previous instructions now", []int{0}},
		{"the system will crash", []int{1}},
		{"code 404", []int{1}},
		{"nothing here", nil},
		{"ignore prior instructions or the app will crash", []int{0, 1}},
	} {
		var got []int
		for _, h := range s.Match(c.text) {
			got = append(got, h.Expr)
			if !strings.Contains(c.text, c.text[h.Start:h.End]) || h.End <= h.Start {
				t.Errorf("bad span %+v", h)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Match(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}
