package trust

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/plughost/plughost/internal/atomicfile"
)

// The held store: a change a plugin makes at runtime (through its change
// stream) is seen only by the process that runs it, so a serving host
// keeps, per plugin, what it holds back in a held file (NAME.json in
// HeldDir), and the commands that start a host of their own (plughost
// plugins --diff, plughost approve) read it there:
//
//	dir := trust.HeldDir(trustFile)
//	trust.WriteHeld(dir, rec)              // serve, at each change; removed when nothing is held
//	rec := trust.ReadHeld(dir, name, dig)  // plugins, approve: of this binary only
//	held := trust.MergeHeld(dir, name, dig, local)

// HeldRecord is a held file: what the plugin of that binary lists and what
// of it the serving host holds back.
type HeldRecord struct {
	Plugin      string           `json:"plugin"`
	Digest      string           `json:"digest,omitempty"`
	Time        time.Time        `json:"time"`
	Definitions []HeldListing    `json:"definitions"`
	Held        []HeldDefinition `json:"held"`
}

// HeldListing is one definition as the plugin lists it.
type HeldListing struct {
	Kind       string          `json:"kind"`
	Name       string          `json:"name"`
	Definition json.RawMessage `json:"definition"`
}

// HeldDefinition is a definition held back (the manager's Held), in the
// held file and in plughost plugins --json.
type HeldDefinition struct {
	Kind     string          `json:"kind"`
	Name     string          `json:"name"`
	State    string          `json:"state"`            // HeldChanged, HeldPending or HeldFlagged
	Reason   string          `json:"reason,omitempty"` // HeldFlagged: the hook's refusal
	Approved json.RawMessage `json:"approved,omitempty"`
	Listed   json.RawMessage `json:"listed"`
}

// The states of a held definition (the manager's DefChanged, DefPending
// and DefFlagged).
const (
	// HeldChanged: changed since its approval.
	HeldChanged = "changed"
	// HeldPending: listed, never approved.
	HeldPending = "pending"
	// HeldFlagged: a hook at on_definitions held it back (Reason says
	// which and why).
	HeldFlagged = "flagged"
)

// HeldDir is where a serving plughost keeps its held files: "held" beside
// the trust file.
func HeldDir(trustFile string) string {
	return filepath.Join(filepath.Dir(trustFile), "held")
}

// WriteHeld writes rec as dir/PLUGIN.json (atomically: a temporary file
// renamed over it), or removes that file when nothing is held.
func WriteHeld(dir string, rec HeldRecord) error {
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

// ReadHeld reads the named plugin's held file; nil when there is none, or
// when it is of another binary than digest (a host that ran another file
// wrote it).
func ReadHeld(dir, name, digest string) *HeldRecord {
	b, err := os.ReadFile(filepath.Join(dir, name+".json"))
	var rec HeldRecord
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.Plugin != name || (digest != "" && rec.Digest != digest) {
		return nil
	}
	return &rec
}

// MergeHeld is what is held back of the plugin name of that digest: what
// a serving host's held file in dir (of the same binary) says it holds,
// which comes first for a definition both hold (it saw the plugin's
// changes at runtime), then what the local host holds (local). dir ""
// reads no file.
func MergeHeld(dir, name, digest string, local []HeldDefinition) []HeldDefinition {
	var out []HeldDefinition
	seen := map[string]bool{}
	if dir != "" {
		if rec := ReadHeld(dir, name, digest); rec != nil {
			for _, h := range rec.Held {
				out = append(out, h)
				seen[h.Kind+"/"+h.Name] = true
			}
		}
	}
	for _, h := range local {
		if !seen[h.Kind+"/"+h.Name] {
			out = append(out, h)
		}
	}
	return out
}

// Line is how plughost plugins names a held definition.
func (h HeldDefinition) Line() string {
	if h.State == HeldFlagged {
		return fmt.Sprintf("held: %s %s flagged: %s; not served, its requests refused", h.Kind, h.Name, h.Reason)
	}
	if h.State == HeldPending {
		return fmt.Sprintf("held: %s %s is not approved; not served", h.Kind, h.Name)
	}
	if h.Approved == nil {
		return fmt.Sprintf("held: %s %s changed since approval; not served", h.Kind, h.Name)
	}
	return fmt.Sprintf("held: %s %s changed since approval; the approved one is served, its calls refused", h.Kind, h.Name)
}

// Diff is a held definition's difference from its approval, member by
// member, words removed [-…-] and added {+…+} (DiffFields); one line
// saying so when only its pin was approved (the approved text is not
// known).
func (h HeldDefinition) Diff() []string {
	if h.State == HeldFlagged {
		return flaggedLines(h.Kind, h.Listed)
	}
	if h.Approved == nil && h.State != HeldPending {
		return []string{"(only its pin was approved: the approved text is not known)"}
	}
	return DiffFields(h.Kind, h.Approved, h.Listed)
}

// flaggedLines is a flagged definition as listed, member by member (those
// DiffFields compares), each value quoted with every character that does
// not print escaped: what a hook found hidden in it shows.
func flaggedLines(kind string, listed json.RawMessage) []string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(listed, &m)
	var lines []string
	for _, f := range append(pinnedFields[kind], "annotations") {
		if t := fieldText(m[f]); t != "" {
			lines = append(lines, f+": "+strconv.QuoteToGraphic(t))
		}
	}
	return lines
}
