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
// Turning the log on or off waits for the next start: the metrics, the
// trust checker and the hooks took the log, or none, when they started.
func (h *Host) reloadAudit(old, next *config.Config) error {
	r := &h.reloads
	oldFile, oldArgs := r.auditTarget(old.Audit)
	file, args := r.auditTarget(next.Audit)
	if file == oldFile && args == oldArgs {
		return nil
	}
	log := h.log.Named("config")
	if h.obs.audit == nil || file == "" {
		log.Warn("the audit log was turned on or off: applied at the next start", "file", file)
		return nil
	}
	if err := h.obs.audit.Reopen(file, args); err != nil {
		return err
	}
	log.Info("the audit log follows the configuration", "file", file, "arguments", args)
	return nil
}
