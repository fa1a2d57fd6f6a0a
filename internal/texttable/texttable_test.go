package texttable

import (
	"strings"
	"testing"
)

// TestTable: each column is as wide as its widest cell that is not the
// last of its row (counted in runes), free text breaks no column, and
// trailing blanks are trimmed.
func TestTable(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		build func(*Table)
		want  string
	}{
		"empty": {build: func(*Table) {}, want: ""},
		"aligned": {build: func(t *Table) {
			t.Row("echo", "running", "sandbox all")
			t.Text("  a long line of free text: %d", 1)
			t.Row("  greet", "Greets.")
			t.Row("clöck", "failed")
		}, want: "echo     running  sandbox all\n  a long line of free text: 1\n  greet  Greets.\nclöck    failed\n"},
		"last cells set no width": {build: func(t *Table) {
			t.Row("a", "a very long last cell")
			t.Row("bb", "c")
		}, want: "a   a very long last cell\nbb  c\n"},
		"trailing blanks trimmed": {build: func(t *Table) {
			t.Row("x", "")
			t.Text("y   ")
		}, want: "x\ny\n"},
	}
	for name, tc := range tests {
		var tab Table
		tc.build(&tab)
		var b strings.Builder
		if err := tab.Write(&b); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", name, b.String(), tc.want)
		}
	}
}
