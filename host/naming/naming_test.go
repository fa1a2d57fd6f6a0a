package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	providerRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,32}$`)
	exposedRE  = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
)

// hash8 is the expected 8-digit hash of s.
func hash8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

func TestForFile(t *testing.T) {
	t.Parallel()
	long37 := "a-plugin-with-a-rather-long-file-name" // 37 characters
	tests := map[string]struct {
		name    string
		derived bool // reason is not empty
	}{
		"echo":                  {"echo", false},
		"echo.exe":              {"echo", false},
		"my.tool.sh":            {"my_tool", true},
		"files-v2":              {"files-v2", false},
		"snake_case":            {"snake_case", false},
		"with space":            {"with_space", true},
		"wörter":                {"w_rter", true},
		"a.b":                   {"a", false},
		"UPPER.Bin":             {"UPPER", false},
		"x+y@z.plugin":          {"x_y_z", true},
		"\xff\xfe":              {"__", true},
		long37:                  {long37[:23] + "_" + hash8(long37), true},
		long37 + ".sh":          {long37[:23] + "_" + hash8(long37), true},
		strings.Repeat("p", 32): {strings.Repeat("p", 32), false},
		strings.Repeat("p", 33): {strings.Repeat("p", 23) + "_" + hash8(strings.Repeat("p", 33)), true},
		"device-x":              {"plugin-device-x", true},
		"device":                {"device", false},
	}
	for in, tc := range tests {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			name, reason := ForFile(in)
			if name != tc.name || (reason != "") != tc.derived {
				t.Errorf("ForFile(%q) = %q, %q; want %q, derived %v", in, name, reason, tc.name, tc.derived)
			}
			if !providerRE.MatchString(name) || !ValidProvider(name) {
				t.Errorf("ForFile(%q) = %q is not a provider name", in, name)
			}
		})
	}
}

// Two long names with the same start get different short names; the short
// name of a long file is what Shorten gives its long name (the config
// file's plugin blocks rely on it).
func TestShorten(t *testing.T) {
	t.Parallel()
	a := strings.Repeat("x", 30) + "-one"
	b := strings.Repeat("x", 30) + "-two"
	if Shorten(a) == Shorten(b) {
		t.Errorf("Shorten gives %q for both %q and %q", Shorten(a), a, b)
	}
	if name, _ := ForFile(a + ".bin"); name != Shorten(a) {
		t.Errorf("ForFile(%q) = %q, Shorten(%q) = %q: want the same", a+".bin", name, a, Shorten(a))
	}
	if got := Shorten("short"); got != "short" {
		t.Errorf("Shorten(short) = %q", got)
	}
}

func TestForLabel(t *testing.T) {
	t.Parallel()
	long37 := "a-plugin-with-a-rather-long-file-name"
	derived, _ := ForFile(long37)
	tests := map[string]struct {
		want string // "" means an error
	}{
		"echo":                   {"echo"},
		long37:                   {derived},
		derived:                  {derived},
		"device-x":               {"plugin-device-x"},
		"my.tool":                {""},
		"":                       {""},
		"has space":              {""},
		strings.Repeat("l", 255): {Shorten(strings.Repeat("l", 255))},
		strings.Repeat("l", 256): {""},
	}
	for in, tc := range tests {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			got, err := ForLabel(in)
			if got != tc.want || (err != nil) != (tc.want == "") {
				t.Errorf("ForLabel(%q) = %q, %v; want %q", in, got, err, tc.want)
			}
		})
	}
}

func TestForDevice(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("v", 40)
	tests := map[string]string{
		"kitchen box":    "device-kitchen-box",
		"kitchen  box!!": "device-kitchen-box",
		"!!box":          "device-box",
		"a_b-c":          "device-a_b-c",
		"a..b//c":        "device-a-b-c",
		"  x  ":          "device-x",
		"x-":             "device-x-",
		"voice_01-A":     "device-voice_01-A",
		"":               "",
		"日本":             "",
		"3":              "device-3",
		long:             ("device-" + long)[:23] + "_" + hash8("device-"+long),
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			got := ForDevice(in)
			if got != want {
				t.Errorf("ForDevice(%q) = %q, want %q", in, got, want)
			}
			if got != "" && !ValidProvider(got) {
				t.Errorf("ForDevice(%q) = %q is not a provider name", in, got)
			}
		})
	}
}

func TestChecks(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		s                      string
		provider, tool, expose bool
	}{
		"plain":        {"echo", true, true, true},
		"dotted":       {"files.read", false, true, false},
		"empty":        {"", false, false, false},
		"space":        {"has space", false, false, false},
		"unicode":      {"ünï", false, false, false},
		"32":           {strings.Repeat("p", 32), true, true, true},
		"33":           {strings.Repeat("p", 33), false, true, true},
		"64":           {strings.Repeat("p", 64), false, true, true},
		"65":           {strings.Repeat("p", 65), false, true, false},
		"128":          {strings.Repeat("p", 128), false, true, false},
		"129":          {strings.Repeat("p", 129), false, false, false},
		"colon":        {"x:y", false, false, false},
		"dash and _":   {"a-b_c", true, true, true},
		"leading dash": {"-a", true, true, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := CheckProvider(tc.s) == nil; got != tc.provider || ValidProvider(tc.s) != tc.provider {
				t.Errorf("CheckProvider(%q) ok = %v, want %v", tc.s, got, tc.provider)
			}
			if got := CheckName(Tool, tc.s) == nil; got != tc.tool {
				t.Errorf("CheckName(Tool, %q) ok = %v, want %v", tc.s, got, tc.tool)
			}
			if got := CheckName(Prompt, tc.s) == nil; got != tc.tool {
				t.Errorf("CheckName(Prompt, %q) ok = %v, want %v", tc.s, got, tc.tool)
			}
			if got := ValidExposed(tc.s); got != tc.expose {
				t.Errorf("ValidExposed(%q) = %v, want %v", tc.s, got, tc.expose)
			}
		})
	}
	if err := CheckName(Prompt, "a b"); err == nil || !strings.Contains(err.Error(), "invalid prompt name") {
		t.Errorf("CheckName(Prompt) error = %v, want it to name a prompt", err)
	}
}

// hashOf is the expected exposed-name hash suffix of a provider's name.
func hashOf(provider, own string) string { return hash8(provider + "\x00" + own) }

func TestAssign(t *testing.T) {
	t.Parallel()
	long70 := strings.Repeat("a", 70)
	type pt struct{ Provider, Own, Exposed, Reason string }
	tests := map[string]struct {
		in   [][2]string
		want []pt // sorted by provider, own name
	}{
		"distinct": {
			in:   [][2]string{{"b", "y"}, {"a", "x"}},
			want: []pt{{"a", "x", "x", ""}, {"b", "y", "y", ""}},
		},
		"clash": {
			in:   [][2]string{{"a", "x"}, {"b", "x"}},
			want: []pt{{"a", "x", "a__x", ReasonClash}, {"b", "x", "b__x", ReasonClash}},
		},
		"dots": {
			in:   [][2]string{{"a", "files.read"}},
			want: []pt{{"a", "files.read", "files_read", ReasonSanitized}},
		},
		"too long": {
			in:   [][2]string{{"a", long70}},
			want: []pt{{"a", long70, long70[:55] + "_" + hashOf("a", long70), ReasonTooLong}},
		},
		"collision after sanitizing": {
			in:   [][2]string{{"a", "a.b"}, {"b", "a_b"}},
			want: []pt{{"a", "a.b", "a_b_" + hashOf("a", "a.b"), ReasonCollision}, {"b", "a_b", "a_b", ""}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var ns []*Name
			for _, p := range tc.in {
				ns = append(ns, &Name{Provider: p[0], Own: p[1]})
			}
			Assign(ns, nil)
			var got []pt
			for _, n := range ns {
				got = append(got, pt{n.Provider, n.Own, n.Exposed, n.Reason})
				if !exposedRE.MatchString(n.Exposed) {
					t.Errorf("exposed name %q does not match %s", n.Exposed, exposedRE)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Assign (-want +got):\n%s", diff)
			}
		})
	}
}

// Step 4: should a hashed name meet a natural one, it gets a longer hash.
func TestAssignHashCollision(t *testing.T) {
	t.Parallel()
	// p's "a.b" would become "a_b_<hash>"; q offers exactly that name.
	hashed := "a_b_" + hashOf("p", "a.b")
	ns := []*Name{{Provider: "q", Own: hashed}, {Provider: "p", Own: "a.b"}, {Provider: "r", Own: "a_b"}}
	Assign(ns, nil)
	got := map[string]string{}
	for _, n := range ns {
		got[n.Provider] = n.Exposed
	}
	if got["q"] != hashed || got["r"] != "a_b" {
		t.Errorf("natural names changed: %v", got)
	}
	if p := got["p"]; p == hashed || !exposedRE.MatchString(p) || !strings.HasPrefix(p, "a_b_") || len(p) != len("a_b_")+16 {
		t.Errorf("p's name = %q, want a_b_ and a 16-digit hash", p)
	}
}

func TestClaim(t *testing.T) {
	t.Parallel()
	type pu struct{ Provider, URI, Owner string }
	tests := map[string]struct {
		in   [][2]string // provider, URI
		want []pu        // sorted by URI, then provider
	}{
		"distinct": {
			in:   [][2]string{{"b", "file:///y"}, {"a", "file:///x"}},
			want: []pu{{"a", "file:///x", "a"}, {"b", "file:///y", "b"}},
		},
		"a clash goes to the first name": {
			in:   [][2]string{{"b", "file:///x"}, {"a", "file:///x"}},
			want: []pu{{"a", "file:///x", "a"}, {"b", "file:///x", "a"}},
		},
		"three providers, one URI": {
			in:   [][2]string{{"c", "u:1"}, {"b", "u:1"}, {"d", "u:1"}},
			want: []pu{{"b", "u:1", "b"}, {"c", "u:1", "b"}, {"d", "u:1", "b"}},
		},
		"byte-wise order: upper case first": {
			in:   [][2]string{{"a", "u:1"}, {"Z", "u:1"}},
			want: []pu{{"Z", "u:1", "Z"}, {"a", "u:1", "Z"}},
		},
		"URIs are compared exactly": {
			in:   [][2]string{{"a", "u:X"}, {"b", "u:x"}},
			want: []pu{{"a", "u:X", "a"}, {"b", "u:x", "b"}},
		},
		"empty": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Every order of the input gives the same owners.
			for rot := range max(len(tc.in), 1) {
				var us []*URI
				for i := range tc.in {
					p := tc.in[(i+rot)%len(tc.in)]
					us = append(us, &URI{Provider: p[0], URI: p[1]})
				}
				Claim(us)
				var got []pu
				for _, u := range us {
					got = append(got, pu{u.Provider, u.URI, u.Owner})
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("rotation %d: Claim (-want +got):\n%s", rot, diff)
				}
			}
		})
	}
}

// exposedOf runs Assign on pairs with prev and returns provider/own →
// exposed, and the names for the next round.
func exposedOf(pairs [][2]string, prev []*Name) (map[string]string, []*Name) {
	var ns []*Name
	for _, p := range pairs {
		ns = append(ns, &Name{Provider: p[0], Own: p[1]})
	}
	Assign(ns, prev)
	m := map[string]string{}
	for _, n := range ns {
		m[n.Provider+"/"+n.Own] = n.Exposed
	}
	return m, ns
}

// Names are sticky: a pair kept from prev keeps its exposed name, and a
// newcomer that clashes with it, or would take it, is renamed instead.
func TestAssignSticky(t *testing.T) {
	t.Parallel()
	_, prev := exposedOf([][2]string{{"files", "create_file"}, {"q", "a.b"}}, nil)
	got, prev := exposedOf([][2]string{{"files", "create_file"}, {"q", "a.b"}, {"device-x", "create_file"}, {"r", "a_b"}}, prev)
	want := map[string]string{
		"files/create_file":    "create_file",               // kept, though it clashes now
		"device-x/create_file": "device-x__create_file",     // the newcomer is prefixed
		"q/a.b":                "a_b",                       // kept
		"r/a_b":                "a_b_" + hashOf("r", "a_b"), // a natural name does not take a kept one
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after the newcomers (-want +got):\n%s", diff)
	}
	// The first provider goes and comes back: now it is the newcomer.
	_, prev = exposedOf([][2]string{{"device-x", "create_file"}}, prev)
	got, _ = exposedOf([][2]string{{"device-x", "create_file"}, {"files", "create_file"}}, prev)
	if got["files/create_file"] != "files__create_file" || got["device-x/create_file"] != "device-x__create_file" {
		t.Errorf("after files came back: %v", got)
	}
	// A kept name that a hashed newcomer would take gets a longer hash.
	hashed := "a_b_" + hashOf("p", "a.b")
	_, prev = exposedOf([][2]string{{"q", hashed}}, nil)
	got, _ = exposedOf([][2]string{{"q", hashed}, {"p", "a.b"}, {"r", "a_b"}}, prev)
	if got["q/"+hashed] != hashed || got["p/a.b"] == hashed || len(got["p/a.b"]) != len("a_b_")+16 {
		t.Errorf("kept %q, newcomer %q: want the newcomer with a 16-digit hash", got["q/"+hashed], got["p/a.b"])
	}
}

// A name in another provider's <provider>__ space is exposed under its
// own provider's prefix, whether that provider is there or not.
func TestForeign(t *testing.T) {
	t.Parallel()
	tests := map[[2]string]bool{
		{"device-x", "files__create_file"}:     true,
		{"device-x", "device-x__a"}:            false,
		{"files", "files__a"}:                  false,
		{"files_", "files___a"}:                false, // its own prefix
		{"a", "__x"}:                           false, // no provider before __
		{"a", "x_y"}:                           false,
		{"a", strings.Repeat("p", 33) + "__x"}: false, // not a provider name
	}
	for in, want := range tests {
		if got := Foreign(in[0], in[1]); got != want {
			t.Errorf("Foreign(%q, %q) = %v, want %v", in[0], in[1], got, want)
		}
	}
	got, _ := exposedOf([][2]string{{"device-x", "files__create_file"}, {"device-y", "files_.create_file"}}, nil)
	if got["device-x/files__create_file"] != "device-x__files__create_file" || got["device-y/files_.create_file"] != "device-y__files__create_file" {
		t.Errorf("names in files' space: %v", got)
	}
}
