package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseObservability(t *testing.T) {
	t.Parallel()
	quarter := 0.25
	for name, c := range map[string]struct {
		src  string
		want *Observability
	}{
		"absent": {"audit {\n  file = \"-\"\n}\n", nil},
		"empty":  {"observability {}\n", &Observability{}},
		"whole": {`observability {
  service_name = "team"
  sample_ratio = 0.25
  otlp {
    endpoint     = "https://otel.example.com:4318"
    protocol     = "http"
    headers_file = "otlp-headers"
    timeout      = "5s"
  }
}
`, &Observability{ServiceName: "team", SampleRatio: &quarter, OTLP: &OTLP{Endpoint: "https://otel.example.com:4318", Protocol: "http",
			HeadersFile: "/etc/plughost/otlp-headers", Timeout: 5 * time.Second}}},
		"grpc by default": {"observability {\n  otlp {\n    endpoint = \"http://127.0.0.1:4317\"\n  }\n}\n",
			&Observability{OTLP: &OTLP{Endpoint: "http://127.0.0.1:4317"}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(c.src), "/etc/plughost/plughost.hcl")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.Observability); diff != "" {
				t.Errorf("observability block (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseObservabilityErrors(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ src, want string }{
		"no endpoint":    {"observability {\n  otlp {}\n}\n", `The argument "endpoint" is required`},
		"bare endpoint":  {"observability {\n  otlp {\n    endpoint = \"collector:4317\"\n  }\n}\n", `plughost.hcl:3,16-32: Invalid endpoint; endpoint must be the collector's URL`},
		"protocol":       {"observability {\n  otlp {\n    endpoint = \"http://c:4317\"\n    protocol = \"http/json\"\n  }\n}\n", `Invalid protocol; protocol must be "grpc" or "http"`},
		"ratio":          {"observability {\n  sample_ratio = 2\n}\n", `sample_ratio must be a number from 0 (none) to 1`},
		"negative ratio": {"observability {\n  sample_ratio = -0.5\n}\n", `sample_ratio must be a number from 0 (none) to 1`},
		"timeout":        {"observability {\n  otlp {\n    endpoint = \"http://c:4317\"\n    timeout = \"2h\"\n  }\n}\n", `timeout must be from 1s to 1m`},
		"two otlp":       {"observability {\n  otlp {\n    endpoint = \"http://c:4317\"\n  }\n  otlp {\n    endpoint = \"http://c:4317\"\n  }\n}\n", `Duplicate otlp block`},
		"two blocks":     {"observability {}\nobservability {}\n", `Duplicate observability block`},
		"typo":           {"observability {\n  sample_rate = 1\n}\n", `Did you mean "sample_ratio"?`},
		"headers inline": {"observability {\n  otlp {\n    endpoint = \"http://c:4317\"\n    headers = \"x\"\n  }\n}\n", `Unsupported argument`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(c.src), "plughost.hcl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}
