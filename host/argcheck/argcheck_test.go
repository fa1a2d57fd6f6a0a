package argcheck_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/argcheck"
)

func Example() {
	s, err := argcheck.Compile([]byte(`{"type":"object",
		"properties":{"format":{"enum":["simple","detailed"]}},"required":["format"]}`))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", s.Check("get_current_time", []byte(`{"format":"simple"}`)))
	fmt.Println(s.Check("get_current_time", []byte(`{}`)))
	fmt.Println(s.Check("get_current_time", []byte(`{"format":"roman"}`)))
	fmt.Println(s.Check("get_current_time", []byte(`[1]`)))
	// Output:
	// ""
	// invalid arguments for tool "get_current_time": /format: missing required property
	// invalid arguments for tool "get_current_time": /format: value must be one of "simple", "detailed"
	// invalid arguments for tool "get_current_time": arguments must be a JSON object, got array
}

// A schema must be self-contained: references to other documents are
// refused when compiling, so no tool can make the host fetch a URL or read
// a file.
func TestCompileRefusesOtherDocuments(t *testing.T) {
	t.Parallel()
	for name, ref := range map[string]string{
		"url":  "https://example.com/schema.json",
		"file": "file:///etc/passwd",
		"path": "other.json",
	} {
		_, err := argcheck.Compile([]byte(`{"type":"object","properties":{"x":{"$ref":"` + ref + `"}}}`))
		if err == nil || !strings.Contains(err.Error(), "references to other documents are not allowed") {
			t.Errorf("%s: Compile = %v, want the reference refused", name, err)
		}
	}
}
