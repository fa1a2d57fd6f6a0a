package catalog

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plughost/plughost/host/tool"
)

var exposedRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestNames(t *testing.T) {
	t.Parallel()
	long70 := strings.Repeat("a", 70)
	dotted128 := strings.Repeat("abc.", 32) // 128 characters
	exactly64 := strings.Repeat("b", 64)
	too129 := strings.Repeat("c", 129)
	type pt struct{ provider, tool, exposed string }
	tests := map[string]struct {
		providers map[string][]string
		want      []pt
		skipped   []Skip
	}{
		"distinct names are kept": {
			providers: map[string][]string{"a": {"x"}, "b": {"y"}},
			want:      []pt{{"a", "x", "x"}, {"b", "y", "y"}},
		},
		"a clash prefixes every provider": {
			providers: map[string][]string{"a": {"x", "only_a"}, "b": {"x"}},
			want:      []pt{{"a", "x", "a__x"}, {"b", "x", "b__x"}, {"a", "only_a", "only_a"}},
		},
		"a three-way clash": {
			providers: map[string][]string{"a": {"x"}, "b": {"x"}, "c": {"x"}},
			want:      []pt{{"a", "x", "a__x"}, {"b", "x", "b__x"}, {"c", "x", "c__x"}},
		},
		"dots become underscores": {
			providers: map[string][]string{"a": {"files.read"}},
			want:      []pt{{"a", "files.read", "files_read"}},
		},
		"dots in a clash": {
			providers: map[string][]string{"a": {"x.y"}, "b": {"x.y"}},
			want:      []pt{{"a", "x.y", "a__x_y"}, {"b", "x.y", "b__x_y"}},
		},
		"a sanitized name colliding with a natural one is hashed": {
			providers: map[string][]string{"a": {"a.b"}, "b": {"a_b"}},
			want:      []pt{{"b", "a_b", "a_b"}, {"a", "a.b", "a_b_" + hash8("a", "a.b")}},
		},
		"two sanitized names colliding are both hashed": {
			providers: map[string][]string{"p": {"a.b_c", "a_b.c"}},
			want:      []pt{{"p", "a.b_c", "a_b_c_" + hash8("p", "a.b_c")}, {"p", "a_b.c", "a_b_c_" + hash8("p", "a_b.c")}},
		},
		"a name in another provider's space gets its own prefix": {
			providers: map[string][]string{"a": {"b__x"}, "b": {"x"}, "c": {"x"}},
			want:      []pt{{"a", "b__x", "a__b__x"}, {"b", "x", "b__x"}, {"c", "x", "c__x"}},
		},
		"a name in its own provider's space is kept": {
			providers: map[string][]string{"a": {"a__x"}, "b": {"y"}},
			want:      []pt{{"a", "a__x", "a__x"}, {"b", "y", "y"}},
		},
		"a bare name beats a prefixed one": {
			providers: map[string][]string{"a": {"a__x", "x"}, "b": {"x"}},
			want:      []pt{{"a", "a__x", "a__x"}, {"a", "x", "a__x_" + hash8("a", "x")}, {"b", "x", "b__x"}},
		},
		"a long name is shortened with a hash": {
			providers: map[string][]string{"a": {long70}},
			want:      []pt{{"a", long70, long70[:55] + "_" + hash8("a", long70)}},
		},
		"64 characters are kept": {
			providers: map[string][]string{"a": {exactly64}},
			want:      []pt{{"a", exactly64, exactly64}},
		},
		"a 128-character dotted name": {
			providers: map[string][]string{"a": {dotted128}},
			want:      []pt{{"a", dotted128, strings.ReplaceAll(dotted128, ".", "_")[:55] + "_" + hash8("a", dotted128)}},
		},
		"long names that share a prefix stay distinct": {
			providers: map[string][]string{"a": {long70, long70 + "z"}},
			want: []pt{
				{"a", long70, long70[:55] + "_" + hash8("a", long70)},
				{"a", long70 + "z", long70[:55] + "_" + hash8("a", long70+"z")},
			},
		},
		"a long clash": {
			providers: map[string][]string{"a": {long70}, "b": {long70}},
			want: []pt{
				{"a", long70, ("a__" + long70)[:55] + "_" + hash8("a", long70)},
				{"b", long70, ("b__" + long70)[:55] + "_" + hash8("b", long70)},
			},
		},
		"bad names are skipped": {
			providers: map[string][]string{"a": {"ok", "", "has space", "ünï", "slash/x", "x:y", too129}},
			want:      []pt{{"a", "ok", "ok"}},
			skipped: []Skip{
				{"a", KindTool, "", `invalid tool name "": want 1 to 128 of [A-Za-z0-9_.-]`},
				{"a", KindTool, "has space", `invalid tool name "has space": want 1 to 128 of [A-Za-z0-9_.-]`},
				{"a", KindTool, "ünï", `invalid tool name "ünï": want 1 to 128 of [A-Za-z0-9_.-]`},
				{"a", KindTool, "slash/x", `invalid tool name "slash/x": want 1 to 128 of [A-Za-z0-9_.-]`},
				{"a", KindTool, "x:y", `invalid tool name "x:y": want 1 to 128 of [A-Za-z0-9_.-]`},
				{"a", KindTool, too129, `invalid tool name "` + too129 + `": want 1 to 128 of [A-Za-z0-9_.-]`},
			},
		},
		"a provider offering a name twice keeps the first": {
			providers: map[string][]string{"a": {"x", "x"}},
			want:      []pt{{"a", "x", "x"}},
			skipped:   []Skip{{"a", KindTool, "x", "the provider offers this name more than once; keeping the first"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			var ps []tool.Provider
			for pname, tools := range tc.providers {
				ps = append(ps, newProvider(pname, tools...))
			}
			f.cat.SetAll(ps...) // together: Set after Set, the first keeps its names (TestStickyNames)
			want := slices.Clone(tc.want)
			slices.SortFunc(want, func(a, b pt) int { return strings.Compare(a.exposed, b.exposed) })
			var got []pt
			for _, e := range f.cat.Exposed() {
				got = append(got, pt{e.Provider, e.Tool, e.ExposedName})
				if !exposedRE.MatchString(e.ExposedName) {
					t.Errorf("exposed name %q does not match %s", e.ExposedName, exposedRE)
				}
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(pt{})); diff != "" {
				t.Errorf("exposed names (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.skipped, f.cat.Skipped(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			// The list serves the same names, in the same order.
			var wantNames []string
			for _, w := range want {
				wantNames = append(wantNames, w.exposed)
			}
			if diff := cmp.Diff(wantNames, allNames(t, f.cat), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ListTools names (-want +got):\n%s", diff)
			}
		})
	}
}

// Every order of the providers of one SetAll gives the same names.
func TestNamesDeterministic(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("q.", 40)
	ps := []*fakeProvider{
		newProvider("a", "x", "a.b", "b__x", long),
		newProvider("b", "x", "a_b", long),
		newProvider("c", "x", "c.d"),
		newProvider("d", "c_d", "y"),
	}
	var want []Entry
	permute(len(ps), func(order []int) {
		f := newFixture(t, nil)
		var in []tool.Provider
		for _, i := range order {
			in = append(in, ps[i])
		}
		f.cat.SetAll(in...)
		got := f.cat.Exposed()
		if want == nil {
			want = got
			return
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("order %v (-first order +this order):\n%s", order, diff)
		}
	})
	seen := map[string]bool{}
	for _, e := range want {
		if seen[e.ExposedName] {
			t.Errorf("exposed name %q used twice", e.ExposedName)
		}
		seen[e.ExposedName] = true
	}
	if len(want) != 11 {
		t.Errorf("got %d exposed tools, want 11: %v", len(want), want)
	}
}

// permute calls f with every permutation of 0..n-1.
func permute(n int, f func([]int)) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			f(append([]int(nil), p...))
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
}

func TestInvalidProviderNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "has space", "dot.ted", strings.Repeat("p", 33), "ünï"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			f.cat.Set(newProvider(name, "x"))
			if got := f.cat.Providers(); len(got) != 0 {
				t.Errorf("Providers() = %v, want none", got)
			}
			if got := f.cat.Exposed(); len(got) != 0 {
				t.Errorf("Exposed() = %v, want none", got)
			}
			if !strings.Contains(f.log.String(), "ignoring provider") {
				t.Errorf("log does not say the provider was ignored:\n%s", f.log)
			}
		})
	}
	f := newFixture(t, nil)
	f.cat.Set(nil)
	if !strings.Contains(f.log.String(), "nil provider") {
		t.Errorf("log does not mention the nil provider:\n%s", f.log)
	}
	f.cat.Set(newProvider(strings.Repeat("p", 32), "x")) // the longest allowed
	if got := f.cat.Providers(); len(got) != 1 {
		t.Errorf("a 32-character provider name was refused")
	}
}

// Set after Set, names are sticky: the first keeps its name, a newcomer
// that clashes gets its prefix, and a name never moves to another
// provider. Providers published while the catalog is held (a burst of
// plugins loading) are named together, as by one SetAll.
func TestStickyNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	names := func() map[string]string {
		m := map[string]string{}
		for _, e := range f.cat.Exposed() {
			m[e.Provider+"/"+e.Tool] = e.ExposedName
		}
		return m
	}
	release := f.cat.Hold()
	f.cat.Set(newProvider("a", "x"))
	f.cat.Set(newProvider("b", "x", "files.read"))
	release()
	want := map[string]string{"a/x": "a__x", "b/x": "b__x", "b/files.read": "files_read"}
	if diff := cmp.Diff(want, names()); diff != "" {
		t.Fatalf("names of one held burst (-want +got):\n%s", diff)
	}
	f.cat.Set(newProvider("c", "x", "files_read", "b__y"))
	want["c/x"], want["c/files_read"], want["c/b__y"] = "c__x", "files_read_"+hash8("c", "files_read"), "c__b__y"
	if diff := cmp.Diff(want, names()); diff != "" {
		t.Errorf("after a newcomer (-want +got):\n%s", diff)
	}
	f.cat.Remove("a")
	f.cat.Set(newProvider("b", "x", "files.read")) // republished: same names
	delete(want, "a/x")
	if diff := cmp.Diff(want, names()); diff != "" {
		t.Errorf("after a left and b was republished (-want +got):\n%s", diff)
	}
	// A burst right after another names its providers around the
	// earlier one's.
	release = f.cat.Hold()
	f.cat.Set(newProvider("d", "w"))
	release()
	release = f.cat.Hold()
	f.cat.Set(newProvider("e", "w"))
	release()
	want["d/w"], want["e/w"] = "w", "e__w"
	if diff := cmp.Diff(want, names()); diff != "" {
		t.Errorf("after a second burst (-want +got):\n%s", diff)
	}
}
