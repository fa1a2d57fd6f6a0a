package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRegistryBlock(t *testing.T) {
	cfg, err := Parse([]byte("registry {\n  url = \"https://registry.example.com\"\n  timeout = \"10s\"\n}\n"), "/etc/plughost/plughost.hcl")
	if err != nil || cfg.Registry.URL != "https://registry.example.com" || cfg.Registry.Timeout != 10*time.Second {
		t.Fatalf("%+v %v", cfg.Registry, err)
	}
	cfg, err = Parse([]byte("registry {\n  url = \"servers\"\n}\n"), "/etc/plughost/plughost.hcl")
	if err != nil || cfg.Registry.URL != filepath.Join("/etc/plughost", "servers") {
		t.Fatalf("a directory: %+v %v", cfg.Registry, err)
	}
	for _, bad := range []string{`url = "http://registry.example.com"`, `url = ""`, `timeout = "1h"`, `nope = 1`} {
		if _, err := Parse([]byte("registry {\n  "+bad+"\n}\n"), "x.hcl"); err == nil {
			t.Errorf("%s: accepted", bad)
		} else if !strings.Contains(err.Error(), "x.hcl") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if cfg, err := Parse([]byte("registry {\n  url = \"http://127.0.0.1:8080\"\n}\n"), "x.hcl"); err != nil || cfg.Registry.URL != "http://127.0.0.1:8080" {
		t.Fatalf("loopback http: %v", err)
	}
}
