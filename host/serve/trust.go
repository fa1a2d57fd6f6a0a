package serve

import (
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/audit"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/preflight"
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/pluginproto"
)

// Trust: the trust block's Checker for the manager, and the warning of
// mode open beyond loopback (docs/security.md "Trust").

// TrustFile is the trust file of cfg (preflight.TrustFile): its trust
// block's file, else $XDG_STATE_HOME/plughost/trust.json.
func TrustFile(cfg *config.Config) (string, error) { return preflight.TrustFile(cfg, os.Getenv) }

// newTrust is the Checker of cfg's trust block; nil when every plugin is
// in mode open (nothing to check, nothing to watch). Each state change is
// logged and, with an audit log, written to it.
func newTrust(cfg *config.Config, log hclog.Logger, auditLog *audit.Log) (*trust.Checker, error) {
	t := cfg.Trust
	if !t.Uses(config.TrustPinned) && !t.Uses(config.TrustSigned) {
		return nil, nil
	}
	opts := &trust.Options{Mode: trust.Mode(t.ModeFor("")), AllowedSigners: t.AllowedSigners, Logger: log,
		ModeFor: func(name string) trust.Mode { return trust.Mode(t.ModeFor(name)) }}
	if t.Uses(config.TrustPinned) || t.Uses(config.TrustSigned) { // signed: for its approved definitions
		file, err := TrustFile(cfg)
		if err != nil {
			return nil, err
		}
		opts.File = file
	}
	if auditLog != nil {
		opts.OnChange = func(c trust.Change) {
			auditLog.Trust(audit.TrustChange{Time: c.Time, Plugin: c.Plugin, Mode: string(c.Mode), State: string(c.State),
				From: string(c.From), Digest: c.Digest, Signer: c.Signer, Reason: c.Reason})
		}
	}
	return trust.New(opts)
}

// denied is manager.Options.Denied: what a plugin asks for beyond its
// sandbox policy as the configuration now grants it.
func denied(live *liveConfig) func(string, pluginproto.Requests) pluginproto.Requests {
	return func(name string, r pluginproto.Requests) pluginproto.Requests {
		return trust.Denied(r, live.get().Sandbox.PolicyFor(name))
	}
}

// warnOpenTrust warns, when serve listens beyond loopback at addr, that
// plugins in mode open run whatever file is dropped into the directory
// and serve its tools to other machines' clients.
func warnOpenTrust(t config.Trust, addr string, dir string, log hclog.Logger) {
	if loopback(addr) || !t.Uses(config.TrustOpen) {
		return
	}
	log.Warn(`serving beyond loopback with plugins in trust mode "open": any executable dropped into the plugin directory runs `+
		`and its tools reach remote clients; consider trust { mode = "pinned" } and plughost approve (docs/security.md "Trust")`,
		"addr", addr, "dir", dir)
}
