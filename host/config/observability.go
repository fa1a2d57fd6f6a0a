package config

import (
	"math/big"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Observability holds the settings of the observability block: traces
// (and the mcp.server.operation.duration metric) exported over OTLP to
// a collector (host/telemetry).
//
//	observability {
//	  service_name = "plughost"     # service.name of every span (default "plughost", or $OTEL_SERVICE_NAME)
//	  sample_ratio = 0.25           # of the traces that start here; a client's sampled flag wins (default 1)
//	  otlp {
//	    endpoint     = "http://otel-collector:4317"  # a URL: http for plain text, https for TLS
//	    protocol     = "grpc"                        # or "http" (OTLP/HTTP, protobuf); default grpc
//	    headers_file = "/etc/plughost/otlp-headers"  # "Name: value" lines, such as an API key
//	    timeout      = "10s"                         # one export's deadline
//	  }
//	}
//
// Without an otlp block the standard OTEL_EXPORTER_OTLP_* variables say
// where spans go; without the observability block either, they turn
// tracing on when OTEL_EXPORTER_OTLP_ENDPOINT (or its _TRACES_ form) is
// set.
type Observability struct {
	// ServiceName is service_name; "" for the default.
	ServiceName string
	// SampleRatio is sample_ratio, from 0 to 1; nil when unset.
	SampleRatio *float64
	// OTLP is the otlp block; nil when absent.
	OTLP *OTLP
}

// OTLP holds the settings of the otlp block inside observability.
type OTLP struct {
	// Endpoint is endpoint, a URL with scheme http or https.
	Endpoint string
	// Protocol is protocol: "grpc" or "http"; "" for the default (grpc).
	Protocol string
	// HeadersFile is headers_file, joined to the configuration file's
	// directory when relative; "" when unset. Its headers are secrets (an
	// API key), so they live in a file of their own, never in this one or
	// on a command line.
	HeadersFile string
	// Timeout is timeout: one export's deadline; 0 for the default.
	Timeout time.Duration
}

// The OTLP protocols the otlp block accepts.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http"
)

var observabilitySchema = hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "service_name"}, {Name: "sample_ratio"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "otlp"}},
}

var otlpSchema = hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "endpoint", Required: true}, {Name: "protocol"}, {Name: "headers_file"}, {Name: "timeout"}},
}

// decode reads the observability block; dir is the configuration file's
// directory, against which a relative headers_file is resolved.
func (o *Observability) decode(body hcl.Body, dir string) error {
	content, err := attributes(body, &observabilitySchema, func(name string, a *hcl.Attribute, v cty.Value) error {
		switch name {
		case "service_name":
			if v.Type() != cty.String || strings.TrimSpace(v.AsString()) == "" {
				return diag(a.Expr.Range(), "Invalid service_name", `service_name must be a name, such as "plughost-team"`)
			}
			o.ServiceName = v.AsString()
		case "sample_ratio":
			if v.Type() != cty.Number {
				return diag(a.Expr.Range(), "Invalid sample_ratio", "sample_ratio must be a number from 0 to 1")
			}
			f, _ := v.AsBigFloat().Float64()
			if v.AsBigFloat().Cmp(big.NewFloat(0)) < 0 || f > 1 {
				return diag(a.Expr.Range(), "Invalid sample_ratio", "sample_ratio must be a number from 0 (none) to 1 (every trace)")
			}
			o.SampleRatio = &f
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, b := range content.Blocks {
		if o.OTLP != nil {
			return diag(b.DefRange, "Duplicate otlp block", "the observability block may have one otlp block")
		}
		o.OTLP = &OTLP{}
		if err := o.OTLP.decode(b.Body, dir); err != nil {
			return err
		}
	}
	return nil
}

func (o *OTLP) decode(body hcl.Body, dir string) error {
	_, err := attributes(body, &otlpSchema, func(name string, a *hcl.Attribute, v cty.Value) (err error) {
		str := ""
		if v.Type() == cty.String {
			str = v.AsString()
		}
		switch name {
		case "endpoint":
			u, perr := url.Parse(str)
			if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return diag(a.Expr.Range(), "Invalid endpoint", `endpoint must be the collector's URL, such as "http://otel-collector:4317" (https for TLS)`)
			}
			o.Endpoint = str
		case "protocol":
			if str != ProtocolGRPC && str != ProtocolHTTP {
				return diag(a.Expr.Range(), "Invalid protocol", `protocol must be "grpc" or "http" (OTLP/HTTP with protobuf)`)
			}
			o.Protocol = str
		case "headers_file":
			if strings.TrimSpace(str) == "" {
				return diag(a.Expr.Range(), "Invalid headers_file", `headers_file must be the path of a file of "Name: value" lines (not the headers themselves)`)
			}
			o.HeadersFile = inDir(dir, str)
		case "timeout":
			o.Timeout, err = durationIn(a, v, time.Second, time.Minute, "1s to 1m")
		}
		return err
	})
	return err
}
