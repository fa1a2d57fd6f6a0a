package install

import (
	"fmt"
	"io"
	"slices"

	"github.com/plughost/plughost/host/trust"
)

// WriteDefinitionsDiff writes, by key, the definitions added, removed and
// changed (member by member, words removed [-…-] and added {+…+}), from
// the ones before (whose origin from names) to those after.
func WriteDefinitionsDiff(w io.Writer, before, after map[string]trust.Definition, from string) error {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range before {
			if !yield(k) {
				return
			}
		}
		for k := range after {
			if _, dup := before[k]; !dup && !yield(k) {
				return
			}
		}
	})
	changed := 0
	for _, k := range keys {
		b, inBefore := before[k]
		a, inAfter := after[k]
		switch {
		case !inBefore:
			fmt.Fprintf(w, "  added %s %s\n", a.Kind, a.Name)
		case !inAfter:
			fmt.Fprintf(w, "  removed %s %s\n", b.Kind, b.Name)
		default:
			lines := trust.DiffFields(a.Kind, b.JSON, a.JSON)
			if len(lines) == 0 {
				continue
			}
			fmt.Fprintf(w, "  changed %s %s\n", a.Kind, a.Name)
			for _, l := range lines {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
		changed++
	}
	if changed == 0 {
		_, err := fmt.Fprintf(w, "  definitions unchanged (%s)\n", from)
		return err
	}
	return nil
}
