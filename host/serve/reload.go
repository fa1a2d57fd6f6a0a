package serve

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/console"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/metrics"
	"github.com/plughost/plughost/host/preflight"
)

// Reloading the configuration while serving (issue 35): on SIGHUP, or
// when the --config file changes (reload_watch.go), the file is read
// again and checked whole with plughost check's checks. A file that fails
// them is refused whole: the old configuration keeps serving, the log
// says why at file:line, and plughost_config_reloads_total{result=
// "refused"} counts it. One that passes is applied area by area by the
// reloaders below, each for work that starts from then on: no session is
// closed and no call in flight is cut. What cannot change while serving
// is named in one WARN line and waits for the next start (reload_next.go).

// A reloader applies one area of the new configuration next (old is the
// one in force until now) to the running host. It is called with the
// reload's lock held, never concurrently with another reload; an error
// names what could not be applied, and the others are applied all the
// same.
type reloader struct {
	area  string
	apply func(h *Host, old, next *config.Config) error
}

// reloaders are the areas a reload applies, in order.
var reloaders = []reloader{
	{"access rules and the MCP servers' limits", (*Host).reloadServing},
	{"plugins: sandbox, trust, hooks, overrides", (*Host).reloadPlugins},
	{"per-caller rate limits", (*Host).reloadRateLimits},
	{"audit", (*Host).reloadAudit},
}

// reloadState is what a reload needs of the start: the file, how it is
// checked, the configuration in force and the MCP servers to retune.
type reloadState struct {
	mu      sync.Mutex
	check   preflight.Options // Config is the file; "" when none was read
	current *config.Config
	src     []byte            // the file current was read from (nil when none), for the console
	flags   []console.Setting // the flags and environment serve started with, for the console (console_config.go)
	sum     [sha256.Size]byte // of the file last read (applied or refused), for the watch
	servers []*mcp.Server
	// auditFlag and auditArgsFlag are --audit-log and --audit-arguments,
	// which win over the audit block.
	auditFlag     string
	auditArgsFlag bool
}

// init records the start's configuration and how serve checked it
// (Preflight): getenv reads the environment as it was before the
// secrets left it.
func (r *reloadState) init(o *Options, cfg *config.Config, getenv func(string) string) {
	path, _ := config.Locate(o.Config, os.Getenv)
	r.check = preflight.Options{Config: path, Getenv: getenv}
	if o.TLS != nil {
		r.check.TLSCert, r.check.TLSKey = o.TLS.Cert, o.TLS.Key
	}
	if o.Observe != nil {
		r.check.AuditLog = o.Observe.AuditLog
		r.auditFlag, r.auditArgsFlag = o.Observe.AuditLog, o.Observe.AuditArgs
	}
	r.current = cfg
	if getenv == nil {
		getenv = os.Getenv
	}
	r.flags = flagSettings(o, getenv)
	if path != "" {
		if src, err := os.ReadFile(path); err == nil {
			r.src, r.sum = src, sha256.Sum256(src)
		}
	}
}

// serveWith makes srv one of the MCP servers a reload retunes (serve's
// own, and the search block's path's).
func (h *Host) serveWith(srv *mcp.Server) *mcp.Server {
	h.reloads.mu.Lock()
	h.reloads.servers = append(h.reloads.servers, srv)
	h.reloads.mu.Unlock()
	return srv
}

// Reload reads the configuration file again and applies it (see above).
// The error says why it was refused, or which areas failed to apply; the
// log and the metrics have it too.
func (h *Host) Reload() error {
	r := &h.reloads
	r.mu.Lock()
	defer r.mu.Unlock()
	log := h.log.Named("config")
	if r.check.Config == "" {
		err := errors.New("no configuration file was read at start (--config, $PLUGHOST_CONFIG or ~/.config/plughost/plughost.hcl): nothing to reload")
		log.Warn(err.Error())
		return err
	}
	src, err := os.ReadFile(r.check.Config)
	if err == nil {
		r.sum = sha256.Sum256(src)
	}
	report := preflight.Check(&r.check)
	if err := report.Err(); err != nil {
		log.Error("configuration refused: the one in force keeps serving", "file", r.check.Config, "error", err)
		h.countReload(metrics.ReloadRefused)
		return fmt.Errorf("configuration refused: %w", err)
	}
	old, next := r.current, report.Config
	var failed []error
	for _, rl := range reloaders {
		if err := rl.apply(h, old, next); err != nil {
			log.Error("could not apply part of the configuration", "area", rl.area, "error", err)
			failed = append(failed, fmt.Errorf("%s: %w", rl.area, err))
		}
	}
	r.current, r.src = next, src
	warnNextStart(old, next, log)
	if failed != nil {
		h.countReload(metrics.ReloadFailed)
		return errors.Join(failed...)
	}
	h.countReload(metrics.ReloadApplied)
	log.Info("configuration reloaded", "file", r.check.Config)
	return nil
}

// changedOnDisk reports whether the file's content differs from what the
// last reload (or the start) read: a watched directory also sees the
// writes of files beside it (an audit log), which must not reload.
func (r *reloadState) changedOnDisk() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	src, err := os.ReadFile(r.check.Config)
	if err != nil {
		return true // gone or unreadable: the reload says so
	}
	return sha256.Sum256(src) != r.sum
}

func (h *Host) countReload(result string) {
	if m := h.obs.metrics; m != nil {
		m.ConfigReloaded(result)
	}
}

// reloadServing applies what the MCP servers read: the access rules (each
// open session's view recomputed, list_changed to those whose view
// changed), the limits in_flight, notification_rate, listen_bytes and
// listen_budget, the stateless block's state_ttl and the tasks block's
// escalate_after, each for the work that starts from now on
// (mcp.Server.Retune says what that means for each).
func (h *Host) reloadServing(_, next *config.Config) error {
	for _, w := range next.Access.Warnings() {
		h.log.Warn("access rule: " + w)
	}
	if m := h.obs.metrics; m != nil {
		next.Access.OnRefuse(m.AccessRefused)
	}
	h.access.Store(next.Access)
	h.limits = next.Limits
	h.stateTTL = next.Stateless.StateTTL
	h.escalateAfter = escalateAfter(next.Tasks)
	opts := h.mcpOptions()
	for _, srv := range h.reloads.servers {
		srv.Retune(opts)
	}
	return nil
}
