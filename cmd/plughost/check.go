package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/preflight"
	"github.com/plughost/plughost/host/serve"
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
	var tlsf serve.TLSOptions
	fs.StringVar(&tlsf.Cert, "tls-cert", "", "serve's --tls-cert, to check as well")
	fs.StringVar(&tlsf.Key, "tls-key", "", "serve's --tls-key, to check as well")
	auditLog := fs.String("audit-log", "", "serve's --audit-log, to check instead of the audit block's file")
	plugins := fs.String("plugins", "", "plugin directory whose declared servers (NAME.mcp.json) are checked too (default $XDG_DATA_HOME/plughost/plugins, when it exists)")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fs, "unexpected argument %q", fs.Arg(0))
	}
	if err := serve.CheckTLS(&tlsf, "a listener"); err != nil { // both or neither
		return usageError(stderr, fs, "%v", err)
	}
	redistore.LogTo(hclog.NewNullLogger()) // a failed dial is a problem below, not a log line
	path, from := config.Locate(*cfgFlag, os.Getenv)
	pluginDir := *plugins
	if pluginDir == "" {
		if d := serve.DefaultDir("plugins"); d != "" {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				pluginDir = d
			}
		}
	}
	rep := preflight.Check(&preflight.Options{Config: path, TLSCert: tlsf.Cert, TLSKey: tlsf.Key, AuditLog: *auditLog, Plugins: pluginDir})
	if len(rep.Problems) > 0 {
		for _, p := range rep.Problems {
			fmt.Fprintln(stdout, p)
		}
		return fmt.Errorf("%d problem(s): plughost serve would refuse this configuration", len(rep.Problems))
	}
	if rep.Config != nil {
		for _, w := range rep.Config.Access.Warnings() {
			fmt.Fprintln(stdout, "warning: "+w)
		}
	}
	fmt.Fprintln(stdout, "ok: "+rep.Summary(path, from))
	return nil
}
