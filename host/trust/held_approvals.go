package trust

import (
	"fmt"
	"os"
	"os/user"
	"time"
)

// Approvals, as plughost approve and revoke write them into the trust
// file: the binary first (so that it runs in mode pinned when started to
// list its definitions), then its definitions pinned.

// HeldDefinitions are the definitions of the plugin name of that digest
// as a serving host's held file in dir lists them (what plughost plugins
// --diff showed); ok is false when there is no held file of this binary.
func HeldDefinitions(dir, name, digest string) (defs []Definition, ok bool) {
	rec := ReadHeld(dir, name, digest)
	if rec == nil || rec.Digest == "" {
		return nil, false
	}
	for _, d := range rec.Definitions {
		defs = append(defs, Definition{Kind: d.Kind, Name: d.Name, JSON: d.Definition})
	}
	return defs, true
}

// PinDefinitions is what approve pins: each definition's pin and the
// definition itself, by key.
func PinDefinitions(defs []Definition) (map[string]Pinned, error) {
	out := make(map[string]Pinned, len(defs))
	for _, d := range defs {
		p, err := Pin(d)
		if err != nil {
			return nil, err
		}
		out[d.Key()] = p
	}
	return out, nil
}

// Approval is one plughost approve: the plugin name's file (base name
// File) of Digest, approved At by By.
type Approval struct {
	Plugin, File, Digest, By string
	At                       time.Time
	// Parts is Entry.Parts: what Digest covers, part by part; nil for a
	// plugin binary.
	Parts map[string]string
}

// ApproveBinary records a's digest in the trust file at path, keeping the
// pinned definitions of an approval of this very binary.
func ApproveBinary(path string, a Approval) error {
	return Update(path, func(f *File) error {
		if e, ok := f.Plugins[a.Plugin]; !ok || e.Digest != a.Digest {
			f.Plugins[a.Plugin] = a.entry(nil)
		}
		return nil
	})
}

// Approve records a in the trust file at path with the definitions pins
// (nil: none pinned), replacing any earlier approval of the plugin.
func Approve(path string, a Approval, pins map[string]Pinned) error {
	return Update(path, func(f *File) error {
		f.Plugins[a.Plugin] = a.entry(pins)
		return nil
	})
}

func (a Approval) entry(pins map[string]Pinned) Entry {
	return Entry{Digest: a.Digest, ApprovedAt: a.At, ApprovedBy: a.By, File: a.File, Parts: a.Parts, Definitions: pins}
}

// Revoke removes the plugin name's approval from the trust file at path;
// an error when it has none.
func Revoke(path, name string) error {
	return Update(path, func(f *File) error {
		if _, ok := f.Plugins[name]; !ok {
			return fmt.Errorf("%s is not approved in %s", name, path)
		}
		delete(f.Plugins, name)
		return nil
	})
}

// Approver is who approves: user@host, as far as they are known.
func Approver() string {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	if h, err := os.Hostname(); err == nil {
		who += "@" + h
	}
	return who
}
