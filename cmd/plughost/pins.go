package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/audit"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/internal/atomicfile"
)

// Definitions pinned (README "Trust"): the audit lines of definitions
// held back or served again, the held file through which a serving host
// tells plughost plugins --diff and plughost approve what it holds back,
// and what approve pins.

// heldDir is where a serving plughost keeps, per plugin, what it holds
// back (NAME.json): "held" beside the trust file. A change a plugin makes
// at runtime (through its change stream) is seen only by the process that
// runs it, so the commands that start their own host read it there.
func heldDir(cfg *config.Config) (string, error) {
	tf, err := trustFile(cfg)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(tf), "held"), nil
}

// heldRecord is a held file: what the plugin of that binary lists and
// what of it the serving host holds back.
type heldRecord struct {
	Plugin      string        `json:"plugin"`
	Digest      string        `json:"digest,omitempty"`
	Time        time.Time     `json:"time"`
	Definitions []heldListing `json:"definitions"`
	Held        []heldReport  `json:"held"`
}

// heldListing is one definition as the plugin lists it.
type heldListing struct {
	Kind       string          `json:"kind"`
	Name       string          `json:"name"`
	Definition json.RawMessage `json:"definition"`
}

// heldReport is a definition held back (manager.Held), in the held file
// and in plughost plugins --json.
type heldReport struct {
	Kind     string          `json:"kind"`
	Name     string          `json:"name"`
	State    string          `json:"state"` // changed or pending
	Approved json.RawMessage `json:"approved,omitempty"`
	Listed   json.RawMessage `json:"listed"`
}

func newHeldReport(h manager.Held) heldReport {
	return heldReport{Kind: h.Kind, Name: h.Name, State: string(h.State), Approved: h.Approved, Listed: h.Listed}
}

// onDefinition is manager.Options.OnDefinition: each change goes to the
// audit log (when there is one) and, in a serving host (dir not ""), to
// the plugin's held file, removed once nothing is held.
func onDefinition(auditLog *audit.Log, dir string, log hclog.Logger) func(manager.DefinitionEvent) {
	return func(e manager.DefinitionEvent) {
		if auditLog != nil {
			auditLog.Definition(audit.DefinitionChange{Time: e.Time, Plugin: e.Plugin, Digest: e.Digest, Kind: e.Kind, Name: e.Name,
				State: string(e.State), Held: e.Held, Pin: e.Pin, Approved: e.ApprovedPin, Diff: e.Diff})
		}
		if dir == "" {
			return
		}
		rec := heldRecord{Plugin: e.Plugin, Digest: e.Digest, Time: e.Time, Definitions: []heldListing{}, Held: []heldReport{}}
		for _, d := range e.Listed {
			rec.Definitions = append(rec.Definitions, heldListing{d.Kind, d.Name, d.JSON})
		}
		for _, h := range e.HeldNow {
			rec.Held = append(rec.Held, newHeldReport(h))
		}
		if err := writeHeld(dir, rec); err != nil {
			log.Warn("cannot keep what is held back for plughost plugins --diff", "plugin", e.Plugin, "error", err)
		}
	}
}

// writeHeld writes rec as dir/PLUGIN.json (atomically: a temporary file
// renamed over it), or removes that file when nothing is held.
func writeHeld(dir string, rec heldRecord) error {
	path := filepath.Join(dir, rec.Plugin+".json")
	if len(rec.Held) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(rec) // compact: the definitions stay as listed
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// readHeld reads the named plugin's held file; nil when there is none, or
// when it is of another binary than digest (a host that ran another
// file wrote it).
func readHeld(dir, name, digest string) *heldRecord {
	b, err := os.ReadFile(filepath.Join(dir, name+".json"))
	var rec heldRecord
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.Plugin != name || (digest != "" && rec.Digest != digest) {
		return nil
	}
	return &rec
}

// removeStaleHeld removes the held files of the plugins a serving host
// holds nothing of once it is ready: left by a host that ran before.
func removeStaleHeld(dir string, sts []manager.PluginStatus, log hclog.Logger) {
	for _, st := range sts {
		if len(st.Held) == 0 {
			if err := writeHeld(dir, heldRecord{Plugin: st.Name}); err != nil {
				log.Warn("cannot remove a stale held file", "plugin", st.Name, "error", err)
			}
		}
	}
}

// heldOf is what is held back of a plugin: what the local host holds,
// and what a serving host's held file (of the same binary) says it
// holds, which comes first for a definition both hold (it saw the
// plugin's changes at runtime).
func heldOf(dir string, st manager.PluginStatus) []heldReport {
	var out []heldReport
	seen := map[string]bool{}
	if dir != "" {
		if rec := readHeld(dir, st.Name, st.Trust.Digest); rec != nil {
			for _, h := range rec.Held {
				out = append(out, h)
				seen[h.Kind+"/"+h.Name] = true
			}
		}
	}
	for _, h := range st.Held {
		if !seen[h.Kind+"/"+h.Name] {
			out = append(out, newHeldReport(h))
		}
	}
	return out
}

// heldLine is how plughost plugins names a held definition.
func heldLine(h heldReport) string {
	if h.State == string(manager.DefPending) {
		return fmt.Sprintf("held: %s %s is not approved; not served", h.Kind, h.Name)
	}
	if h.Approved == nil {
		return fmt.Sprintf("held: %s %s changed since approval; not served", h.Kind, h.Name)
	}
	return fmt.Sprintf("held: %s %s changed since approval; the approved one is served, its calls refused", h.Kind, h.Name)
}

// printDiff writes plughost plugins --diff NAME: each held definition of
// the plugin with, member by member, its words removed [-…-] and added
// {+…+} since its approval.
func printDiff(w io.Writer, name string, held []heldReport) error {
	if len(held) == 0 {
		_, err := fmt.Fprintf(w, "nothing of %s is held back\n", name)
		return err
	}
	for _, h := range held {
		if _, err := fmt.Fprintf(w, "%s\n", heldLine(h)); err != nil {
			return err
		}
		lines := trust.DiffFields(h.Kind, h.Approved, h.Listed)
		if h.Approved == nil && h.State != string(manager.DefPending) {
			lines = []string{"(only its pin was approved: the approved text is not known)"}
		}
		for _, l := range lines {
			if _, err := fmt.Fprintf(w, "  %s\n", l); err != nil {
				return err
			}
		}
	}
	_, err := fmt.Fprintf(w, "approve them with: plughost approve %s\n", name)
	return err
}

// pinDefinitions is what approve pins: each definition's pin and the
// definition itself, by key.
func pinDefinitions(defs []trust.Definition) (map[string]trust.Pinned, error) {
	out := make(map[string]trust.Pinned, len(defs))
	for _, d := range defs {
		p, err := trust.Pin(d)
		if err != nil {
			return nil, err
		}
		out[d.Key()] = p
	}
	return out, nil
}

// definitionsToApprove lists what the plugin of that provider name and
// digest offers, for approve to pin: as a serving host's held file lists
// it, when it has one of this binary (what plughost plugins --diff
// showed), else by starting the plugin once, sandboxed, in a host of its
// own. approved is called first, to let the plugin run in mode pinned.
// ok is false when the plugin lists nothing (it failed, or is
// quarantined in mode signed).
func definitionsToApprove(hf *hostFlags, cfg *config.Config, plugin, digest string, approved func() error,
	stderr io.Writer) (defs []trust.Definition, from string, ok bool, err error) {
	if dir, err := heldDir(cfg); err == nil {
		if rec := readHeld(dir, plugin, digest); rec != nil && rec.Digest != "" {
			for _, d := range rec.Definitions {
				defs = append(defs, trust.Definition{Kind: d.Kind, Name: d.Name, JSON: d.Definition})
			}
			return defs, "as the running plughost lists them", true, nil
		}
	}
	if err := approved(); err != nil {
		return nil, "", false, err
	}
	h, err := startHost(hf, stderr)
	if err != nil {
		return nil, "", false, err
	}
	defer h.stop()
	<-h.manager.Ready()
	for _, st := range h.manager.Status() {
		if st.Name == plugin && st.Trust.Digest != "" && st.Trust.Digest != digest {
			return nil, "", false, fmt.Errorf("%s changed while it was being approved (%s, not %s); approve it again", plugin, st.Trust.Digest, digest)
		}
	}
	defs, ok = h.manager.Definitions(plugin)
	return defs, "as the plugin listed them when started now", ok, nil
}
