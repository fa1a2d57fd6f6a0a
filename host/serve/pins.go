package serve

import (
	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/audit"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/trust"
)

// Definitions pinned (docs/security.md "Definitions pinned"): the audit lines of definitions
// held back or served again, the held file through which a serving host
// tells plughost plugins --diff and plughost approve what it holds back,
// and what approve pins.

// heldDir is where a serving plughost keeps, per plugin, what it holds
// back (NAME.json): "held" beside the trust file. A change a plugin makes
// at runtime (through its change stream) is seen only by the process that
// runs it, so the commands that start their own host read it there.
func heldDir(cfg *config.Config) (string, error) {
	tf, err := TrustFile(cfg)
	if err != nil {
		return "", err
	}
	return trust.HeldDir(tf), nil
}

// newHeldReport is the manager's held definition as the held store keeps it.
func newHeldReport(h manager.Held) trust.HeldDefinition {
	return trust.HeldDefinition{Kind: h.Kind, Name: h.Name, State: string(h.State), Reason: h.Reason, Approved: h.Approved, Listed: h.Listed}
}

// onDefinition is manager.Options.OnDefinition: each change goes to the
// audit log (when there is one) and, in a serving host (dir not ""), to
// the plugin's held file, removed once nothing is held.
func onDefinition(auditLog *audit.Log, dir string, log hclog.Logger) func(manager.DefinitionEvent) {
	return func(e manager.DefinitionEvent) {
		if auditLog != nil {
			auditLog.Definition(audit.DefinitionChange{Time: e.Time, Plugin: e.Plugin, Digest: e.Digest, Kind: e.Kind, Name: e.Name,
				State: string(e.State), Held: e.Held, Reason: e.Reason, Pin: e.Pin, Approved: e.ApprovedPin, Diff: e.Diff})
		}
		if dir == "" {
			return
		}
		rec := trust.HeldRecord{Plugin: e.Plugin, Digest: e.Digest, Time: e.Time, Definitions: []trust.HeldListing{}, Held: []trust.HeldDefinition{}}
		for _, d := range e.Listed {
			rec.Definitions = append(rec.Definitions, trust.HeldListing{Kind: d.Kind, Name: d.Name, Definition: d.JSON})
		}
		for _, h := range e.HeldNow {
			rec.Held = append(rec.Held, newHeldReport(h))
		}
		if err := trust.WriteHeld(dir, rec); err != nil {
			log.Warn("cannot keep what is held back for plughost plugins --diff", "plugin", e.Plugin, "error", err)
		}
	}
}

// removeStaleHeld removes the held files of the plugins a serving host
// holds nothing of once it is ready: left by a host that ran before.
func removeStaleHeld(dir string, sts []manager.PluginStatus, log hclog.Logger) {
	for _, st := range sts {
		if len(st.Held) == 0 {
			if err := trust.WriteHeld(dir, trust.HeldRecord{Plugin: st.Name}); err != nil {
				log.Warn("cannot remove a stale held file", "plugin", st.Name, "error", err)
			}
		}
	}
}

// heldOf is what is held back of a plugin: what a serving host's held
// file in dir says it holds, then what the local host holds
// (trust.MergeHeld).
func heldOf(dir string, st manager.PluginStatus) []trust.HeldDefinition {
	local := make([]trust.HeldDefinition, 0, len(st.Held))
	for _, h := range st.Held {
		local = append(local, newHeldReport(h))
	}
	return trust.MergeHeld(dir, st.Name, st.Trust.Digest, local)
}
