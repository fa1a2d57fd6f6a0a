// Package texttable aligns rows of cells in columns among lines of free
// text, as `plughost plugins` prints its table:
//
//	var t texttable.Table
//	t.Row("echo", "running", "sandbox landlock")
//	t.Text("  stderr of %s:", "echo") // breaks no column
//	t.Row("  greet", "Greets.")
//	t.Write(os.Stdout)
package texttable

import (
	"fmt"
	"io"
	"strings"
)

// Table is text/tabwriter's alignment for rows of cells among lines of
// free text that must not break it: a column is as wide as its widest cell
// that is not the last of its row.
type Table struct {
	lines []line
}

type line struct {
	cells []string // a row; nil for text
	text  string
}

// Row adds a row of cells.
func (t *Table) Row(cells ...string) { t.lines = append(t.lines, line{cells: cells}) }

// Text adds a line of free text (fmt.Sprintf of format and args),
// which no column is aligned to.
func (t *Table) Text(format string, args ...any) {
	t.lines = append(t.lines, line{text: fmt.Sprintf(format, args...)})
}

// Write writes the table to w, the rows aligned and every line's trailing
// blanks trimmed.
func (t *Table) Write(w io.Writer) error {
	var widths []int
	for _, l := range t.lines {
		for i, c := range l.cells[:max(len(l.cells)-1, 0)] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for _, l := range t.lines {
		if l.cells == nil {
			b.WriteString(strings.TrimRight(l.text, " "))
			b.WriteByte('\n')
			continue
		}
		var line strings.Builder
		for i, c := range l.cells {
			line.WriteString(c)
			if i < len(l.cells)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))+2))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
