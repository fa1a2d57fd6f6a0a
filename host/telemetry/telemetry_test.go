package telemetry

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/config"
)

func env(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

// TestStartOff: without an otlp block or OTEL_EXPORTER_OTLP_*ENDPOINT,
// and with OTEL_SDK_DISABLED, nothing starts and the server gets no
// tracer: tracing off costs nothing.
func TestStartOff(t *testing.T) {
	t.Parallel()
	ratio := 0.5
	for name, c := range map[string]struct {
		cfg  *config.Observability
		vars map[string]string
	}{
		"nothing":              {nil, nil},
		"a block without otlp": {&config.Observability{SampleRatio: &ratio}, nil},
		"disabled": {&config.Observability{OTLP: &config.OTLP{Endpoint: "http://127.0.0.1:4317"}},
			map[string]string{"OTEL_SDK_DISABLED": "true"}},
	} {
		t.Run(name, func(t *testing.T) {
			tel, err := Start(context.Background(), c.cfg, Settings{Getenv: env(c.vars)})
			if err != nil || tel != nil {
				t.Fatalf("Start = %v, %v; want nil, nil", tel, err)
			}
			if tel.Tracer() != nil || tel.Meter() != nil || tel.Shutdown(context.Background()) != nil {
				t.Error("a nil Telemetry gave a tracer or meter, or failed to shut down")
			}
		})
	}
}

// TestStartOn: an otlp block, or the standard variables alone, start
// the providers (no connection is made until a span is exported).
func TestStartOn(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		cfg   *config.Observability
		vars  map[string]string
		where string
	}{
		"grpc block": {&config.Observability{OTLP: &config.OTLP{Endpoint: "http://127.0.0.1:4317"}}, nil, "grpc http://127.0.0.1:4317"},
		"http block": {&config.Observability{OTLP: &config.OTLP{Endpoint: "https://c.example:4318/", Protocol: "http"}}, nil, "http https://c.example:4318/"},
		"variables":  {nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, "http (from OTEL_EXPORTER_OTLP_*)"},
		"grpc variables": {nil, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "grpc (from OTEL_EXPORTER_OTLP_*)"},
	} {
		t.Run(name, func(t *testing.T) {
			tel, err := Start(context.Background(), c.cfg, Settings{Getenv: env(c.vars)})
			if err != nil || tel == nil {
				t.Fatalf("Start = %v, %v", tel, err)
			}
			defer func() { // nothing listens: the flush may only fail, quickly
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				_ = tel.Shutdown(ctx)
			}()
			if tel.Where != c.where || tel.Tracer() == nil || tel.Meter() == nil {
				t.Errorf("Where %q (want %q), tracer %v, meter %v", tel.Where, c.where, tel.Tracer(), tel.Meter())
			}
		})
	}
}

// TestStartErrors: a protocol plughost does not speak, a headers file
// missing or malformed, are errors naming the cause; a malformed line is
// named by its number, never its text (it may hold a secret).
func TestStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("# key\nAuthorization Bearer s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("A: b\n", maxHeadersFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	block := func(headers string) *config.Observability {
		return &config.Observability{OTLP: &config.OTLP{Endpoint: "http://127.0.0.1:4317", HeadersFile: headers}}
	}
	for name, c := range map[string]struct {
		cfg  *config.Observability
		vars map[string]string
		want string
	}{
		"json":      {nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, `OTEL_EXPORTER_OTLP_PROTOCOL "http/json"`},
		"missing":   {block(filepath.Join(dir, "absent")), nil, "headers_file: open " + filepath.Join(dir, "absent")},
		"malformed": {block(bad), nil, bad + `:2: want "Name: value"`},
		"too big":   {block(big), nil, "larger than 64 KiB"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Start(context.Background(), c.cfg, Settings{Getenv: env(c.vars)})
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Start error = %v, want it to contain %q (and no secret)", err, c.want)
			}
		})
	}
}

func TestReadHeaders(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "h")
	if err := os.WriteFile(path, []byte("# comment\n\nX-Api-Key: abc:def\n  Authorization :  Bearer t  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := readHeaders(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h["X-Api-Key"] != "abc:def" || h["Authorization"] != "Bearer t" {
		t.Errorf("headers %v", h)
	}
}
