package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCompareMatchesRowsByName: rows are matched by what names them, not
// by their position, and a figure one run lacks shows as "-".
func TestCompareMatchesRowsByName(t *testing.T) {
	dir := t.TempDir()
	before := filepath.Join(dir, "before.json")
	after := filepath.Join(dir, "after.json")
	os.WriteFile(before, []byte(`{"calls":[{"server":"plughost","transport":"stdio","calls_per_s":1000},{"server":"mcp-go","transport":"stdio","calls_per_s":3000}],
		"targets":[{"name":"t","value":2}]}`), 0o600)
	os.WriteFile(after, []byte(`{"calls":[{"server":"mcp-go","transport":"stdio","calls_per_s":3000},{"server":"plughost","transport":"stdio","calls_per_s":2500,"p50_us":90}],
		"targets":[{"name":"t","value":1}]}`), 0o600)
	var out strings.Builder
	if err := compare(&out, before, after); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`calls\[plughost stdio\]\.calls_per_s +1000 +2500 +2\.50`,
		`calls\[mcp-go stdio\]\.calls_per_s +3000 +3000 +1\.00`,
		`calls\[plughost stdio\]\.p50_us +- +90 +-`,
		`target: t +2 +1 +0\.50`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("no line matching %q in\n%s", want, out.String())
		}
	}
}
