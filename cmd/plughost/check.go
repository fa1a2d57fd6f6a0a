package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/preflight"
	"github.com/plughost/plughost/host/tasks/redistore"
)

// checkCommand is `plughost check [--config FILE] [--plugins DIR]`: what
// would stop serve from starting with the configuration (package
// preflight, which serve runs first too), and what would stop a declared
// server of the plugin directory (its secrets' sources missing or not
// granted), each problem with its file:line and fix, and status 1; else a
// short summary and status 0.
func checkCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	cfgFlag := fs.String("config", "", "HCL configuration file (default $"+config.EnvConfig+", else ~/.config/plughost/plughost.hcl when it exists)")
	var tlsf tlsFlags
	fs.StringVar(&tlsf.cert, "tls-cert", "", "serve's --tls-cert, to check as well")
	fs.StringVar(&tlsf.key, "tls-key", "", "serve's --tls-key, to check as well")
	auditLog := fs.String("audit-log", "", "serve's --audit-log, to check instead of the audit block's file")
	plugins := fs.String("plugins", "", "plugin directory whose declared servers (NAME.mcp.json) are checked too (default $XDG_DATA_HOME/plughost/plugins, when it exists)")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fs, "unexpected argument %q", fs.Arg(0))
	}
	if err := tlsf.check("a listener"); err != nil { // both or neither
		return usageError(stderr, fs, "%v", err)
	}
	redistore.LogTo(hclog.NewNullLogger()) // a failed dial is a problem below, not a log line
	path, from := config.Locate(*cfgFlag, os.Getenv)
	pluginDir := *plugins
	if pluginDir == "" {
		if d := defaultDir("plugins"); d != "" {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				pluginDir = d
			}
		}
	}
	rep := preflight.Check(&preflight.Options{Config: path, TLSCert: tlsf.cert, TLSKey: tlsf.key, AuditLog: *auditLog, Plugins: pluginDir})
	if len(rep.Problems) > 0 {
		for _, p := range rep.Problems {
			fmt.Fprintln(stdout, p)
		}
		return fmt.Errorf("%d problem(s): plughost serve would refuse this configuration", len(rep.Problems))
	}
	fmt.Fprintln(stdout, "ok: "+summary(rep.Config, path, from))
	return nil
}

// summary says in one line what a configuration that passed sets up.
func summary(cfg *config.Config, path, from string) string {
	var b strings.Builder
	if path == "" {
		b.WriteString("no configuration file (every setting has its default)")
	} else {
		fmt.Fprintf(&b, "%s (%s)", path, from)
	}
	parts := []string{fmt.Sprintf("%d sandbox plugin block(s)", len(cfg.Sandbox.Plugins))}
	mode := cfg.Trust.Mode
	if mode == "" {
		mode = config.TrustOpen
	}
	parts = append(parts, "trust mode "+mode)
	if cfg.Tasks.Redis != nil {
		parts = append(parts, "tasks in redis at "+cfg.Tasks.Redis.Address+" (reached)")
	}
	if cfg.Audit != nil {
		parts = append(parts, "audit log "+cfg.Audit.File)
	}
	if cfg.Access != nil {
		parts = append(parts, "access rules compiled")
	}
	if cfg.Auth != nil {
		parts = append(parts, "OAuth for serve --http")
	}
	if cfg.Search != nil {
		parts = append(parts, "tool search mode")
	}
	return b.String() + ": " + strings.Join(parts, ", ")
}

// preflightServe runs the checks of plughost check for serve: serve
// refuses to start on what check reports, and only on that.
func preflightServe(hf *hostFlags) error {
	path, _ := config.Locate(hf.config, os.Getenv)
	o := &preflight.Options{Config: path}
	redistore.LogTo(hclog.NewNullLogger()) // a failed dial is a problem reported; serve's own store logs again
	if hf.tls != nil {
		o.TLSCert, o.TLSKey = hf.tls.cert, hf.tls.key
	}
	if hf.observe != nil {
		o.AuditLog = hf.observe.auditLog
	}
	return preflight.Check(o).Err()
}
