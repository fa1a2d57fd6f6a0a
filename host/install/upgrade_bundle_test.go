package install

import (
	"strings"
	"testing"

	"github.com/plughost/plughost/host/mcpb"
)

// TestSameUserConfig: the values given for a bundle's version still mean
// the same to the next one unless a key is gone, has another type (or is
// now several, or sensitive), or a new key is required without default.
func TestSameUserConfig(t *testing.T) {
	dir := &mcpb.UserConfig{Type: mcpb.ConfigDirectory, Title: "Dirs", Multiple: true}
	old := &mcpb.Manifest{UserConfig: map[string]*mcpb.UserConfig{"dirs": dir}}
	for _, c := range []struct {
		name string
		next map[string]*mcpb.UserConfig
		want string // "" for no difference
	}{
		{"reworded", map[string]*mcpb.UserConfig{"dirs": {Type: mcpb.ConfigDirectory, Title: "Folders", Multiple: true}}, ""},
		{"new optional", map[string]*mcpb.UserConfig{"dirs": dir, "depth": {Type: mcpb.ConfigNumber}}, ""},
		{"new with a default", map[string]*mcpb.UserConfig{"dirs": dir, "depth": {Type: mcpb.ConfigNumber, Required: true, Default: 2.0}}, ""},
		{"new required", map[string]*mcpb.UserConfig{"dirs": dir, "token": {Type: mcpb.ConfigString, Required: true, Sensitive: true}}, "token is new and required"},
		{"gone", map[string]*mcpb.UserConfig{}, "dirs is gone"},
		{"one only", map[string]*mcpb.UserConfig{"dirs": {Type: mcpb.ConfigDirectory}}, "dirs is of type directory, was directory (several)"},
		{"sensitive", map[string]*mcpb.UserConfig{"dirs": {Type: mcpb.ConfigDirectory, Multiple: true, Sensitive: true}}, "dirs is of type directory (several, sensitive), was directory (several)"},
	} {
		err := sameUserConfig(old, &mcpb.Manifest{UserConfig: c.next})
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
