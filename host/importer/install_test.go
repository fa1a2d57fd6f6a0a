package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/declared"
)

// Options.Secrets makes a value secret whatever its name says, for env
// and headers alike; Options.Amend completes the declaration written.
func TestImportExplicitSecretsAndAmend(t *testing.T) {
	t.Parallel()
	dir, state := t.TempDir(), t.TempDir()
	f := &File{Servers: map[string]json.RawMessage{
		"local":  json.RawMessage(`{"command":"/usr/bin/srv","env":{"LICENSE":"l-1","LEVEL":"info"}}`),
		"remote": json.RawMessage(`{"type":"http","url":"https://mcp.example.com/mcp","headers":{"X-Tenant-Code":"t-1","X-Region":"eu"}}`),
	}}
	rep := Import(f, &Options{PluginDir: dir, StateDir: state, Secrets: []string{"LICENSE", "X-Tenant-Code"},
		Amend: func(s *declared.Server) { s.Origin = &declared.Origin{Name: "io.example/x", Version: "1", Type: "npm"} }})
	for _, s := range rep.Servers {
		if s.Skipped != nil {
			t.Fatal(s.Skipped)
		}
	}
	local, err := declared.Load(filepath.Join(dir, "local"+declared.Suffix))
	if err != nil {
		t.Fatal(err)
	}
	if local.EnvFiles["LICENSE"] != filepath.Join(state, "secrets", "local", "license") || local.Env["LEVEL"] != "info" || local.Origin == nil || local.Origin.Name != "io.example/x" {
		t.Fatalf("local: %+v", local)
	}
	remote, err := declared.Load(filepath.Join(dir, "remote"+declared.Suffix))
	if err != nil {
		t.Fatal(err)
	}
	if remote.HeaderFiles["X-Tenant-Code"] != filepath.Join(state, "secrets", "remote", "x-tenant-code") || remote.Headers["X-Region"] != "eu" {
		t.Fatalf("remote: %+v", remote)
	}
	for _, path := range []string{local.EnvFiles["LICENSE"], remote.HeaderFiles["X-Tenant-Code"]} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", path, st, err)
		}
	}
	if b := Snippet(rep.Servers); !strings.Contains(b, local.EnvFiles["LICENSE"]) || !strings.Contains(b, remote.HeaderFiles["X-Tenant-Code"]) {
		t.Fatalf("the snippet grants not the secret files:\n%s", b)
	}
}

func TestRemovePluginBlock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plughost.hcl")
	src := "# mine\ntrust {\n  mode = \"pinned\"\n}\n\nsandbox {\n  plugin \"keep\" {\n    runtime = \"node\"\n  }\n  plugin \"memory\" {\n    runtime = \"node\"\n    allow_read = [\"/s/x\"]\n  }\n}\n"
	os.WriteFile(path, []byte(src), 0o640)
	removed, err := RemovePluginBlock(path, "memory")
	if err != nil || !removed {
		t.Fatalf("removed %v, %v", removed, err)
	}
	got, _ := os.ReadFile(path)
	want := "# mine\ntrust {\n  mode = \"pinned\"\n}\n\nsandbox {\n  plugin \"keep\" {\n    runtime = \"node\"\n  }\n}\n"
	if string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", st.Mode())
	}
	if removed, err := RemovePluginBlock(path, "memory"); err != nil || removed {
		t.Fatalf("again: %v, %v", removed, err)
	}
}
