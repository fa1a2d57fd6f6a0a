package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTrust(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		src     string
		want    Trust
		modes   map[string]string // plugin → ModeFor
		wantErr string
	}{
		"absent: open": {src: "", want: Trust{Plugin: map[string]string{}},
			modes: map[string]string{"echo": TrustOpen}},
		"pinned, relative file": {src: "trust {\n  mode = \"pinned\"\n  file = \"trust.json\"\n}\n",
			want:  Trust{Mode: TrustPinned, File: "/etc/plughost/trust.json", Plugin: map[string]string{}},
			modes: map[string]string{"echo": TrustPinned}},
		"a plugin block wins over the default": {
			src: "trust {\n  mode = \"pinned\"\n  allowed_signers = \"/keys\"\n  plugin \"files\" {\n    mode = \"signed\"\n  }\n  plugin \"clock\" {\n    mode = \"open\"\n  }\n}\n",
			want: Trust{Mode: TrustPinned, AllowedSigners: "/keys",
				Plugin: map[string]string{"files": TrustSigned, "clock": TrustOpen}},
			modes: map[string]string{"files": TrustSigned, "clock": TrustOpen, "echo": TrustPinned}},
		"a plugin block without a default": {src: "trust {\n  plugin \"files\" {\n    mode = \"pinned\"\n  }\n}\n",
			want:  Trust{Plugin: map[string]string{"files": TrustPinned}},
			modes: map[string]string{"files": TrustPinned, "echo": TrustOpen}},
		"unknown mode":                  {src: "trust {\n  mode = \"strict\"\n}\n", wantErr: `plughost.hcl:2,10-18: Invalid mode; mode must be "open", "pinned" or "signed"`},
		"signed without signers":        {src: "trust {\n  plugin \"x\" {\n    mode = \"signed\"\n  }\n}\n", wantErr: "Missing allowed_signers"},
		"empty file":                    {src: "trust {\n  file = \"\"\n}\n", wantErr: "Invalid file"},
		"a plugin block without a mode": {src: "trust {\n  plugin \"x\" {}\n}\n", wantErr: `Missing required argument; The argument "mode" is required`},
		"two blocks of a plugin": {src: "trust {\n  plugin \"x\" {\n    mode = \"open\"\n  }\n  plugin \"x\" {\n    mode = \"open\"\n  }\n}\n",
			wantErr: "Duplicate plugin block"},
		"bundles: roots relative to the file": {
			src:  "trust {\n  bundles {\n    trusted_roots = [\"ca.pem\", \"/srv/ca2.pem\"]\n    require_signature = true\n  }\n}\n",
			want: Trust{Plugin: map[string]string{}, Bundles: Bundles{TrustedRoots: []string{"/etc/plughost/ca.pem", "/srv/ca2.pem"}, RequireSignature: true}}},
		"bundles: required without roots": {src: "trust {\n  bundles {\n    require_signature = true\n  }\n}\n",
			wantErr: "Missing trusted_roots; require_signature needs trusted_roots"},
		"bundles: roots not a list": {src: "trust {\n  bundles {\n    trusted_roots = \"ca.pem\"\n  }\n}\n",
			wantErr: "Invalid trusted_roots"},
		"bundles: require not a bool": {src: "trust {\n  bundles {\n    trusted_roots = [\"ca.pem\"]\n    require_signature = \"yes\"\n  }\n}\n",
			wantErr: "require_signature must be true or false"},
		"bundles: two blocks":       {src: "trust {\n  bundles {}\n  bundles {}\n}\n", wantErr: "Duplicate bundles block"},
		"trusted_roots elsewhere":   {src: "trust {\n  trusted_roots = [\"ca.pem\"]\n}\n", wantErr: `"trusted_roots" belongs in a bundles block inside trust { }.`},
		"allowed_signers elsewhere": {src: "sandbox {\n  allowed_signers = \"/k\"\n}\n", wantErr: `"allowed_signers" belongs in trust { }.`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(tc.src), "/etc/plughost/plughost.hcl")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cfg.Trust); diff != "" {
				t.Fatalf("trust block (-want +got):\n%s", diff)
			}
			for p, m := range tc.modes {
				if got := cfg.Trust.ModeFor(p); got != m {
					t.Errorf("ModeFor(%q) = %s, want %s", p, got, m)
				}
			}
		})
	}
}
