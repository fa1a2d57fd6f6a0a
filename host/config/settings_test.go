package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Settings lists each attribute with its path and line, in the file's
// order; a value that may be a secret is "(set)", a long one cut.
func TestSettings(t *testing.T) {
	t.Parallel()
	src := `limits {
  sessions = 10
}
trust {
  mode = "pinned"
  plugin "echo" {
    mode = "open"
  }
}
registry {
  password = "hunter2"
  password_file = "/run/secrets/registry"
}
access {
  rule "long" {
    allow = "` + strings.Repeat("x", MaxSettingValue) + `"
  }
}
`
	got, err := Settings([]byte(src), "plughost.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("got %d settings, want 6: %+v", len(got), got)
	}
	want := []Setting{
		{Name: "limits.sessions", Value: "10", Line: 2},
		{Name: "trust.mode", Value: `"pinned"`, Line: 5},
		{Name: `trust.plugin "echo".mode`, Value: `"open"`, Line: 7},
		{Name: "registry.password", Value: "(set)", Line: 11},
		{Name: "registry.password_file", Value: `"/run/secrets/registry"`, Line: 12},
	}
	if diff := cmp.Diff(want, got[:5]); diff != "" {
		t.Errorf("Settings (-want +got):\n%s", diff)
	}
	if long := got[5]; long.Name != `access.rule "long".allow` || len(long.Value) != MaxSettingValue+len("…") || !strings.HasSuffix(long.Value, "…") {
		t.Errorf("the long setting = %s (%d bytes), want it cut at %d bytes with …", long.Name, len(long.Value), MaxSettingValue)
	}
	if _, err := Settings([]byte("limits {"), "bad.hcl"); err == nil || !strings.Contains(err.Error(), "bad.hcl:1") {
		t.Errorf("Settings of a broken file: %v, want a syntax error naming bad.hcl:1", err)
	}
}
