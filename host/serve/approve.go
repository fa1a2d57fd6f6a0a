package serve

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/trust"
)

// Approving (plughost approve NAME): the plugin file as it is now, and
// the definitions it offers, pinned in the trust file (package trust
// keeps the file and the held store; this starts the host that lists
// the definitions when no serving host's held file has them).

// Approved is an approval written: the plugin's provider name, file and
// digest, and the definitions pinned (Listed false when it listed none:
// only its digest is approved), as From says they were listed.
type Approved struct {
	Plugin, File, Digest string
	Pins                 map[string]trust.Pinned
	From                 string
	Listed               bool
}

// Approve approves the plugin named plugin of o's plugin directory in the
// trust file at path: a declared server's package is installed first
// (approve then approves the installed tree), its digest must be want
// when want is not "", and its definitions are pinned as a serving host
// lists them, else as a host of o started now does. Progress and the
// host's log go to stderr.
func Approve(o *Options, cfg *config.Config, path, plugin, want string, stderr io.Writer) (*Approved, error) {
	dir, err := ResolveDir(o.Plugins, "plugins", "--plugins")
	if err != nil {
		return nil, err
	}
	plugin, file, err := manager.Find(dir, plugin)
	if err != nil {
		return nil, err
	}
	base := filepath.Base(file)
	if err := InstallDeclared(cfg, plugin, file, stderr); err != nil {
		return nil, err
	}
	digest, parts, err := PluginDigest(plugin, file)
	if err != nil {
		return nil, err
	}
	if want != "" && want != digest {
		return nil, fmt.Errorf("%s is %s now, not %s: it changed since it was reviewed; nothing approved", file, digest, want)
	}
	approval := trust.Approval{Plugin: plugin, File: base, Digest: digest, By: trust.Approver(), At: time.Now().UTC(), Parts: parts}
	// The binary is approved first (keeping the definitions of an
	// approval of this very binary), so that it runs in mode pinned when
	// started to list its definitions.
	approveBinary := func() error { return trust.ApproveBinary(path, approval) }
	hf := *o
	hf.Plugins = dir
	defs, from, listed, err := definitionsToApprove(&hf, cfg, plugin, digest, approveBinary, stderr)
	if err != nil {
		return nil, err
	}
	var pins map[string]trust.Pinned
	if listed {
		if pins, err = trust.PinDefinitions(defs); err != nil {
			return nil, err
		}
	}
	if err := trust.Approve(path, approval, pins); err != nil {
		return nil, err
	}
	return &Approved{Plugin: plugin, File: file, Digest: digest, Pins: pins, From: from, Listed: listed}, nil
}

// definitionsToApprove lists what the plugin of that provider name and
// digest offers, for approve to pin: as a serving host's held file lists
// it, when it has one of this binary (what plughost plugins --diff
// showed), else by starting the plugin once, sandboxed, in a host of its
// own. approved is called first, to let the plugin run in mode pinned.
// ok is false when the plugin lists nothing (it failed, or is
// quarantined in mode signed).
func definitionsToApprove(hf *Options, cfg *config.Config, plugin, digest string, approved func() error,
	stderr io.Writer) (defs []trust.Definition, from string, ok bool, err error) {
	if dir, err := heldDir(cfg); err == nil {
		if defs, ok := trust.HeldDefinitions(dir, plugin, digest); ok {
			return defs, "as the running plughost lists them", true, nil
		}
	}
	if err := approved(); err != nil {
		return nil, "", false, err
	}
	h, err := Start(hf, stderr)
	if err != nil {
		return nil, "", false, err
	}
	defer h.Stop()
	<-h.manager.Ready()
	for _, st := range h.manager.Status() {
		if st.Name == plugin && st.Trust.Digest != "" && st.Trust.Digest != digest {
			return nil, "", false, fmt.Errorf("%s changed while it was being approved (%s, not %s); approve it again", plugin, st.Trust.Digest, digest)
		}
	}
	defs, ok = h.manager.Definitions(plugin)
	return defs, "as the plugin listed them when started now", ok, nil
}
