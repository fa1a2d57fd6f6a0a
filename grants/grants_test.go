package grants

import (
	"strings"
	"testing"
)

func TestGrantsDir(t *testing.T) {
	g := &Grants{Plugin: "notes", Dirs: map[string]Dir{"notes": {Path: "/srv/notes", Write: true}, "ref": {Path: "/srv/ref"}}}
	if p, err := g.Dir("notes"); err != nil || p != "/srv/notes" {
		t.Errorf("Dir(notes) = %q, %v", p, err)
	}
	if p, err := g.WritableDir("notes"); err != nil || p != "/srv/notes" {
		t.Errorf("WritableDir(notes) = %q, %v", p, err)
	}
	if p, err := g.Dir("ref"); err != nil || p != "/srv/ref" {
		t.Errorf("Dir(ref) = %q, %v", p, err)
	}
	for _, c := range []struct {
		get  func(string) (string, error)
		name string
		want string
	}{
		{g.Dir, "cache", `sandbox { plugin "notes" { dir "cache" { path = "/the/directory" } } }`},
		{g.WritableDir, "cache", `dir "cache" { path = "/the/directory" } } } with the line write = true`},
		{g.WritableDir, "ref", `add the line write = true to the dir "ref" block`},
		{(&Grants{}).Dir, "x", `sandbox { plugin "NAME" { dir "x"`},
	} {
		if _, err := c.get(c.name); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
