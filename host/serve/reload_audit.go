package serve

import (
	"github.com/plughost/plughost/host/config"
)

// auditTarget is the audit log's file and whether it takes the calls'
// arguments, as newObserver decides them: the flags win over the block.
func (r *reloadState) auditTarget(block *config.Audit) (file string, args bool) {
	file, args = r.auditFlag, r.auditArgsFlag
	if block != nil && file == "" {
		file, args = block.File, args || block.Arguments
	}
	return file, args
}

// reloadAudit moves the audit log to the audit block's new file, or
// changes its arguments setting, from the next line on (audit.Log.Reopen).
// A reload that changes neither reopens the same file: that is how a log
// rotation reaches a running host (logrotate renames the file, then
// `systemctl reload plughost` or SIGHUP), as with every daemon's logs.
// Turning the log on or off waits for the next start: the metrics, the
// trust checker and the hooks took the log, or none, when they started.
func (h *Host) reloadAudit(old, next *config.Config) error {
	r := &h.reloads
	oldFile, oldArgs := r.auditTarget(old.Audit)
	file, args := r.auditTarget(next.Audit)
	log := h.log.Named("config")
	if (file == "") != (oldFile == "") {
		log.Warn("the audit log was turned on or off: applied at the next start", "file", file)
		return nil
	}
	if h.obs.audit == nil || file == "" {
		return nil
	}
	if err := h.obs.audit.Reopen(file, args); err != nil {
		return err
	}
	if file == oldFile && args == oldArgs {
		log.Info("the audit log reopened", "file", file)
		return nil
	}
	log.Info("the audit log follows the configuration", "file", file, "arguments", args)
	return nil
}
