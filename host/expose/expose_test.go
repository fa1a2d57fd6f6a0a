package expose

import "testing"

func TestListAllows(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		allow, deny []string
		in, out     []string
	}{
		"empty exposes everything": {in: []string{"a", "b/c", ""}},
		"allow only what matches": {allow: []string{"get_*", "search"},
			in: []string{"get_issue", "get_", "search"}, out: []string{"searches", "list", "xget_issue"}},
		"deny wins over allow": {allow: []string{"get_*"}, deny: []string{"get_secret"},
			in: []string{"get_issue"}, out: []string{"get_secret", "put"}},
		"star crosses slashes":          {allow: []string{"repo://docs/*"}, in: []string{"repo://docs/a/b.md"}, out: []string{"repo://src/a.go"}},
		"question mark is one rune":     {deny: []string{"v?"}, in: []string{"v", "v10"}, out: []string{"v1", "vé"}},
		"regexp characters are literal": {allow: []string{"a.b+(c)"}, in: []string{"a.b+(c)"}, out: []string{"aXb+(c)", "a.bb(c)"}},
		"deny everything":               {deny: []string{"*"}, out: []string{"", "anything"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, err := Compile(c.allow, c.deny)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range c.in {
				if !l.Allows(n) {
					t.Errorf("%q is not exposed, want it exposed", n)
				}
			}
			for _, n := range c.out {
				if l.Allows(n) {
					t.Errorf("%q is exposed, want it hidden", n)
				}
			}
		})
	}
}

func TestCompileRefusesAnEmptyPattern(t *testing.T) {
	t.Parallel()
	if _, err := Compile([]string{""}, nil); err == nil {
		t.Error("an empty pattern compiled")
	}
}

func TestRulesEmpty(t *testing.T) {
	t.Parallel()
	var none *Rules
	deny, _ := Compile(nil, []string{"x"})
	if !none.Empty() || !(&Rules{}).Empty() || (&Rules{Prompts: deny}).Empty() {
		t.Error("Empty is wrong")
	}
}
