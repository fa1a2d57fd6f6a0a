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
	if b := s.branches[2]; b.expr != 1 || len(b.needs) != 0 {
		t.Fatalf("branch 2: %+v", b)
	}
	// the first needs a word of each group: (ignore|disregard), (previous|prior), " instructions"
	if n := len(s.branches[0].needs); n != 3 {
		t.Fatalf("branch 0 needs %d sets, want 3", n)
	}
	for _, c := range []struct {
		text string
		want []int
	}{
		{"please ignore previous instructions now", []int{0}},
		{"the system will crash", []int{1}},
		{"code 404", []int{1}},
		{"nothing here", nil},
		{"ignore the instructions", nil}, // no (previous|prior)
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
