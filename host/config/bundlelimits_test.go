package config

import (
	"strings"
	"testing"
)

func TestBundleLimits(t *testing.T) {
	cfg, err := Parse([]byte("plugins {\n  bundle_limits {\n    max_files = 500\n    max_file_size = \"8MiB\"\n    max_total_size = 1048576\n  }\n}\n"), "t.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Plugins.BundleLimits; got != (BundleLimits{MaxFiles: 500, MaxFileSize: 8 << 20, MaxTotalSize: 1 << 20}) {
		t.Fatalf("bundle_limits = %+v", got)
	}
	for src, want := range map[string]string{
		"max_files = 0":          "max_files must be a whole number",
		"max_files = 1.5":        "max_files must be a whole number",
		`max_file_size = "lots"`: `max_file_size must be a size such as "512MiB"`,
		"max_total_size = 0":     "max_total_size must be a size above zero",
		"max_size = 1":           "max_size",
	} {
		_, err := Parse([]byte("plugins {\n  bundle_limits {\n    "+src+"\n  }\n}\n"), "t.hcl")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want one saying %q", src, err, want)
		}
	}
}
