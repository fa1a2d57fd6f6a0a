package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/audit"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/preflight"
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/pluginproto"
)

// Trust: the trust block's Checker for the manager, the warning of mode
// open beyond loopback, and the approve and revoke commands (README
// "Trust").

// trustFile is the trust file of cfg (preflight.TrustFile): its trust
// block's file, else $XDG_STATE_HOME/plughost/trust.json.
func trustFile(cfg *config.Config) (string, error) { return preflight.TrustFile(cfg, os.Getenv) }

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
		file, err := trustFile(cfg)
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
// sandbox policy.
func denied(cfg *config.Config) func(string, pluginproto.Requests) pluginproto.Requests {
	return func(name string, r pluginproto.Requests) pluginproto.Requests {
		return trust.Denied(r, cfg.Sandbox.PolicyFor(name))
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
		`and its tools reach remote clients; consider trust { mode = "pinned" } and plughost approve (README "Trust")`,
		"addr", addr, "dir", dir)
}

// approveCommand is `plughost approve NAME` (approve) and `plughost
// revoke NAME`: the trust file gets, or loses, NAME's approval of the
// plugin file as it is now. A running plughost follows the file.
func approveCommand(approve bool, args []string, stdout, stderr io.Writer) error {
	name := "revoke"
	if approve {
		name = "approve"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	plugins := fs.String("plugins", "", "plugin directory (default $XDG_DATA_HOME/plughost/plugins)")
	cfgPath := fs.String("config", "", "HCL configuration file: its trust block names the trust file (default $XDG_STATE_HOME/plughost/trust.json)")
	want := new(string)
	if approve {
		fs.StringVar(want, "digest", "", "approve only if the file's digest is this one (sha256:…, as plughost plugins shows it): "+
			"what was reviewed is what is approved")
	}
	plugin, err := parseWithArg(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	if plugin == "" {
		return usageError(stderr, fs, "which plugin? usage: plughost %s NAME", name)
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	path, err := trustFile(cfg)
	if err == nil {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return err
	}
	if !approve {
		if err := trust.Revoke(path, plugin); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s in %s; a running plughost stops serving it\n", plugin, path)
		return nil
	}
	dir, err := resolveDir(*plugins, "plugins", "--plugins")
	if err != nil {
		return err
	}
	plugin, file, err := manager.Find(dir, plugin)
	if err != nil {
		return err
	}
	base := filepath.Base(file)
	if err := installDeclared(cfg, plugin, file, stderr); err != nil {
		return err
	}
	digest, err := pluginDigest(plugin, file)
	if err != nil {
		return err
	}
	if *want != "" && *want != digest {
		return fmt.Errorf("%s is %s now, not %s: it changed since it was reviewed; nothing approved", file, digest, *want)
	}
	approval := trust.Approval{Plugin: plugin, File: base, Digest: digest, By: trust.Approver(), At: time.Now().UTC()}
	// The binary is approved first (keeping the definitions of an
	// approval of this very binary), so that it runs in mode pinned when
	// started to list its definitions.
	approveBinary := func() error { return trust.ApproveBinary(path, approval) }
	hf := &hostFlags{plugins: dir, config: *cfgPath, logLevel: "warn"}
	defs, from, listed, err := definitionsToApprove(hf, cfg, plugin, digest, approveBinary, stderr)
	if err != nil {
		return err
	}
	var pins map[string]trust.Pinned
	if listed {
		if pins, err = trust.PinDefinitions(defs); err != nil {
			return err
		}
	}
	if err := trust.Approve(path, approval, pins); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "approved %s (%s, %s) in %s\n", plugin, file, digest, path)
	if listed {
		fmt.Fprintf(stdout, "pinned %s %s\n", plural(len(pins), "definition", "definitions"), from)
	} else {
		fmt.Fprintf(stdout, "note: %s listed no definitions (it did not run): only its digest is approved, "+
			"and its first listing is what later ones are held to\n", plugin)
	}
	switch m := cfg.Trust.ModeFor(plugin); m {
	case config.TrustSigned:
		fmt.Fprintf(stdout, "note: %s is in trust mode %q: its signature lets it run, this approval pins its definitions\n", plugin, m)
	case config.TrustOpen:
		fmt.Fprintf(stdout, "note: %s is in trust mode %q, where approvals are not consulted\n", plugin, m)
	}
	return nil
}
