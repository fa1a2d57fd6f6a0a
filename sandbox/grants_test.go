package sandbox

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/plughost/plughost/grants"
)

func TestGrantedNamedDirectories(t *testing.T) {
	pol := &Policy{
		AllowRead: []string{"/usr/share/dict"},
		Dirs:      []Dir{{Name: "notes", Path: "/srv/notes", Write: true}, {Name: "ref", Path: "/srv/ref"}},
		Net:       NetList, NetAllow: []string{"api.example.com:443"},
		Env: []string{"LANG"},
	}
	got, env := pol.granted("notes")
	if !slices.Contains(got.AllowWrite, "/srv/notes") || slices.Contains(got.AllowRead, "/srv/notes") {
		t.Errorf("a writable dir: read %v, write %v; want it writable", got.AllowRead, got.AllowWrite)
	}
	if !slices.Contains(got.AllowRead, "/srv/ref") || slices.Contains(got.AllowWrite, "/srv/ref") {
		t.Errorf("a read-only dir: read %v, write %v; want it readable only", got.AllowRead, got.AllowWrite)
	}
	if !slices.Contains(got.Env, grants.Env) {
		t.Errorf("env %v does not pass %s", got.Env, grants.Env)
	}
	if len(pol.AllowWrite) != 0 || len(pol.Env) != 1 {
		t.Errorf("the policy itself was changed: %+v", pol)
	}
	var g grants.Grants
	if err := json.Unmarshal([]byte(env), &g); err != nil {
		t.Fatal(err)
	}
	want := grants.Grants{Plugin: "notes", Dirs: map[string]grants.Dir{"notes": {Path: "/srv/notes", Write: true}, "ref": {Path: "/srv/ref"}},
		AllowRead: []string{"/usr/share/dict", "/srv/ref"}, AllowWrite: []string{"/srv/notes"},
		AllowNet: "list", NetAllow: []string{"api.example.com:443"}, Env: []string{"LANG"}}
	if b, _ := json.Marshal(want); string(b) != env {
		t.Errorf("%s =\n%s\nwant\n%s", grants.Env, env, b)
	}
	_, env = (&Policy{}).granted("bare")
	if env != `{"plugin":"bare","dirs":{},"allow_read":[],"allow_write":[],"allow_net":"none","net_allow":[],"env":[]}` {
		t.Errorf("the default policy's grants: %s", env)
	}
}

func TestCheckNamedDirectories(t *testing.T) {
	for _, c := range []struct {
		dirs []Dir
		want string
	}{
		{[]Dir{{Name: "", Path: "/a"}}, "a name is 1 to 64"},
		{[]Dir{{Name: "a b", Path: "/a"}}, "a name is 1 to 64"},
		{[]Dir{{Name: strings.Repeat("n", 65), Path: "/a"}}, "a name is 1 to 64"},
		{[]Dir{{Name: "n", Path: "rel"}}, `path "rel" is not an absolute path`},
		{[]Dir{{Name: "n", Path: "/a"}, {Name: "n", Path: "/b"}}, `dir "n": granted twice`},
	} {
		err := (&Policy{Dirs: c.dirs}).Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%+v) = %v, want %q", c.dirs, err, c.want)
		}
	}
	if err := (&Policy{Dirs: []Dir{{Name: "notes-2_x", Path: "/a"}}}).Check(); err != nil {
		t.Errorf("a valid dir: %v", err)
	}
}

func TestPolicyReadable(t *testing.T) {
	pol := &Policy{AllowRead: []string{"/run/secrets/"}, AllowWrite: []string{"/srv/out"}, Dirs: []Dir{{Name: "n", Path: "/srv/notes"}}}
	for path, want := range map[string]bool{
		"/run/secrets/token": true, "/run/secrets": true, "/srv/out/x": true, "/srv/notes/a/b": true,
		"/run/secretsX/token": false, "/srv": false, "/etc/shadow": false,
	} {
		if got := pol.Readable(path); got != want {
			t.Errorf("Readable(%s) = %v, want %v", path, got, want)
		}
	}
}
