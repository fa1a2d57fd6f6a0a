package device

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTokens(t *testing.T) {
	t.Parallel()
	got, err := ParseTokens(strings.NewReader(`# device tokens
kd83-kitchen   ids=kitchen
hall-boxes     ids=hall-*,porch   # the hall and the porch

shared
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Token{
		{Secret: "kd83-kitchen", IDs: []string{"kitchen"}},
		{Secret: "hall-boxes", IDs: []string{"hall-*", "porch"}},
		{Secret: "shared"},
	}
	if !cmp.Equal(got, want) {
		t.Errorf("ParseTokens: %s", cmp.Diff(want, got))
	}

	for _, tc := range []struct{ file, err string }{
		{"a b\n", `line 1: after the token only ids=ID,… may follow, found "b" (a token cannot contain spaces)`},
		{"ok\na##b\n", `line 2: a token cannot contain "##" (AUTH ends the token there)`},
		{"x ids=a\nx ids=b\n", "line 2: the same token as line 1"},
		{"x ids=a,,b\n", "line 1: ids: an empty id (a stray comma?)"},
		{"x ids=[a\n", `line 1: ids: "[a": syntax error in pattern`},
		{"x ids=a##b\n", `line 1: ids: "a##b": an id cannot contain "##"`},
	} {
		if _, err := ParseTokens(strings.NewReader(tc.file)); err == nil || err.Error() != tc.err {
			t.Errorf("ParseTokens(%q) = %v, want %q", tc.file, err, tc.err)
		}
	}
}

func TestTokenAllows(t *testing.T) {
	t.Parallel()
	any := Token{Secret: "s"}
	hall := Token{Secret: "s", IDs: []string{"hall-*", "porch"}}
	for _, tc := range []struct {
		tok   Token
		voice string
		want  bool
	}{
		{any, "", true},
		{any, "kitchen", true},
		{hall, "porch", true},
		{hall, "hall-2", true},
		{hall, "hall", false},
		{hall, "kitchen", false},
		{hall, "", false},
		{Token{Secret: "s", IDs: []string{"*"}}, "", false},
	} {
		if got := tc.tok.Allows(tc.voice); got != tc.want {
			t.Errorf("%v.Allows(%q) = %v, want %v", tc.tok.IDs, tc.voice, got, tc.want)
		}
	}
}
