package declared

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBundleDeclarations(t *testing.T) {
	sha := strings.Repeat("a1", 32)
	s, err := Parse([]byte(`{"bundle": "fs.mcpb", "bundle_sha256": "` + sha + `", "user_config": {"dirs": ["/srv/a"], "n": 3, "b": true},
	  "user_config_files": {"key": "/state/secrets/fs/user_config.key"}, "requests": {"write": ["/srv/a"]}}`))
	if err != nil || s.Type != TypeStdio || s.Bundle != "fs.mcpb" || s.Remote() {
		t.Fatalf("%+v %v", s, err)
	}
	if src := s.Sources(); len(src) != 1 || src[0].Member != "user_config_files: key" {
		t.Fatalf("sources %+v", src)
	}
	for in, want := range map[string]string{
		`{"bundle": "fs.mcpb", "command": "node"}`:                                           `a "bundle" has no "command"`,
		`{"bundle": "fs.zip"}`:                                                               `is not a .mcpb file`,
		`{"bundle": "fs.mcpb", "bundle_sha256": "ABC"}`:                                      "is not a SHA-256",
		`{"bundle": "fs.mcpb", "type": "http"}`:                                              `a bundle's server is "stdio"`,
		`{"bundle": "fs.mcpb", "user_config": {"k": {"x": 1}}}`:                              "a value is a string, number, boolean or list of strings",
		`{"bundle": "fs.mcpb", "user_config_files": {"k": "rel"}}`:                           "is not an absolute path",
		`{"command": "node", "user_config": {"k": "v"}}`:                                     `this declaration has no "bundle"`,
		`{"bundle": "fs.mcpb", "user_config": {"k": "v"}, "user_config_files": {"k": "/f"}}`: "both give k",
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want one saying %q", in, err, want)
		}
	}
	dir := t.TempDir()
	secret := filepath.Join(dir, "key")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = &Server{UserConfig: map[string]any{"n": 3.0}, UserConfigFiles: map[string]string{"key": secret}}
	if v, err := s.UserConfigValues(); err != nil || v["key"] != "s3cret" || v["n"] != 3.0 {
		t.Fatalf("values %v %v", v, err)
	}
	if err := os.Chmod(secret, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UserConfigValues(); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a secret file others may read: %v", err)
	}
	// A .mcpb in the plugin directory is the declaration naming it.
	if name, ok := Name("fs.mcpb"); !ok || name != "fs" {
		t.Fatalf("Name(fs.mcpb) = %q %v", name, ok)
	}
	if s, err := Load(filepath.Join(dir, "fs.mcpb")); err != nil || s.Bundle != filepath.Join(dir, "fs.mcpb") {
		t.Fatalf("Load of a .mcpb: %+v %v", s, err)
	}
}
