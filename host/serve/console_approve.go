package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/plughost/plughost/host/audit"
	"github.com/plughost/plughost/host/console"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/trust"
)

// Approving and revoking in the console: what plughost approve and revoke
// write into the trust file, written by the serving host itself (no
// second host is started to list the definitions: this one lists them),
// then applied at once rather than when the trust file's watch hears of
// the write: the Checker reads the file again and the manager checks
// every plugin again, so the approved plugin starts (and a revoked one
// stops) before the browser's next page. The person is named in the
// trust file (approved_by), in the audit log (an approve or revoke line)
// and in the log.

// Approve approves the plugin's file as it is now, provided it is the
// file of digest and would pin the definitions of listing (what the page
// reviewed showed): else console.ErrChanged. The definitions pinned are
// those the held file lists (what the page showed held), else those the
// running plugin lists, else none (only the file is approved; its first
// listing is what later ones are held to).
func (s *consoleSource) Approve(ctx context.Context, plugin, digest, listing, by string) error {
	h := s.h
	if digest == "" {
		return errors.New("no digest: approve the file the page showed, by its digest")
	}
	name, file, err := manager.Find(h.pluginDir, plugin)
	if err != nil {
		return fmt.Errorf("%w: %s", errNoPlugin, err)
	}
	now, parts, err := PluginDigest(name, file)
	if err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	if now != digest {
		return fmt.Errorf("%w: %s is %s now, not %s; nothing approved", console.ErrChanged, file, now, digest)
	}
	path, held, err := s.trustFiles()
	if err != nil {
		return err
	}
	pins, err := s.pinsOf(name, now, held)
	if err != nil {
		return err
	}
	// The held file is written again whenever the plugin lists again, its
	// file unchanged: a plugin could show one diff and list another set
	// while the person reads it.
	if sum := listingSum(pins); sum != listing {
		return fmt.Errorf("%w: %s lists other definitions now than the page showed; nothing approved", console.ErrChanged, name)
	}
	approval := trust.Approval{Plugin: name, File: filepath.Base(file), Digest: now, By: by, At: time.Now().UTC(), Parts: parts}
	if err := trust.Approve(path, approval, pins); err != nil {
		return err
	}
	if a := h.obs.audit; a != nil {
		a.Approval(audit.Approval{Time: approval.At, Action: "approve", Plugin: name, Digest: now, By: by, Pinned: len(pins)})
	}
	h.log.Info("approved in the console", "plugin", name, "digest", now, "by", by, "pinned", len(pins))
	s.applyTrust()
	h.obs.events.send(console.Event{Plugin: name, Kind: "approved"})
	return nil
}

// pinsOf is what an approval of the plugin name's file of digest pins:
// the definitions the held file lists (nil when it has none of this
// file: then those the running plugin lists, when it runs this very
// file; else none).
func (s *consoleSource) pinsOf(name, digest, held string) (map[string]trust.Pinned, error) {
	defs, ok := trust.HeldDefinitions(held, name, digest)
	if !ok {
		if st, err := s.pluginNamed(name); err == nil && st.Trust.Digest == digest {
			defs, ok = s.h.manager.Definitions(name)
		}
	}
	if !ok {
		return nil, nil
	}
	return trust.PinDefinitions(defs)
}

// listingSum fingerprints what an approval pins (console.Plugin.Listing):
// each definition's key, pin and annotations' fingerprint, length-prefixed
// in key order. "" for none.
func listingSum(pins map[string]trust.Pinned) string {
	if len(pins) == 0 {
		return ""
	}
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(pins)) {
		p := pins[k]
		for _, f := range []string{k, p.Pin, p.Annotations} {
			fmt.Fprintf(h, "%d:%s", len(f), f)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// listingOf is console.Plugin.Listing for the plugin name's file of
// digest: what an approval would pin now; "" when it would pin none or
// cannot tell (no trust file).
func (s *consoleSource) listingOf(name, digest string) string {
	_, held, err := s.trustFiles()
	if err != nil || digest == "" {
		return ""
	}
	pins, err := s.pinsOf(name, digest, held)
	if err != nil {
		return ""
	}
	return listingSum(pins)
}

// Revoke removes the plugin's approval: the manager quarantines it
// (mode pinned), and it stops serving.
func (s *consoleSource) Revoke(ctx context.Context, plugin, by string) error {
	h := s.h
	path, _, err := s.trustFiles()
	if err != nil {
		return err
	}
	if err := trust.Revoke(path, plugin); err != nil {
		return err
	}
	if a := h.obs.audit; a != nil {
		a.Approval(audit.Approval{Time: time.Now(), Action: "revoke", Plugin: plugin, By: by})
	}
	h.log.Info("approval revoked in the console", "plugin", plugin, "by", by)
	s.applyTrust()
	h.obs.events.send(console.Event{Plugin: plugin, Kind: "revoked"})
	return nil
}

// trustFiles are the trust file of the configuration in force and the
// held files' directory beside it.
func (s *consoleSource) trustFiles() (path, held string, err error) {
	path, err = TrustFile(s.h.plugins.live.get())
	if err != nil {
		return "", "", err
	}
	return path, trust.HeldDir(path), nil
}

// applyTrust applies the trust file just written: read again now, and
// every plugin checked again.
func (s *consoleSource) applyTrust() {
	if lt := s.h.plugins.trust; lt != nil {
		lt.reloadNow()
	}
	s.h.manager.Recheck()
}

// reloadNow reads the trust files of the Checker in force again now (a
// write of this process's own: its watch would hear of it later).
func (t *liveTrust) reloadNow() {
	t.mu.Lock()
	c := t.cur
	t.mu.Unlock()
	if c != nil {
		c.Reload()
	}
}
