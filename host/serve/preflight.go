package serve

import (
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/preflight"
	"github.com/plughost/plughost/host/tasks/redistore"
)

// Preflight runs the checks of plughost check for serve: serve
// refuses to start on what check reports, and only on that.
func Preflight(hf *Options) error {
	path, _ := config.Locate(hf.Config, os.Getenv)
	o := &preflight.Options{Config: path}
	redistore.LogTo(hclog.NewNullLogger()) // a failed dial is a problem reported; serve's own store logs again
	if hf.TLS != nil {
		o.TLSCert, o.TLSKey = hf.TLS.Cert, hf.TLS.Key
	}
	if hf.Observe != nil {
		o.AuditLog = hf.Observe.AuditLog
	}
	return preflight.Check(o).Err()
}
