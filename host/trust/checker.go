package trust

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/plughost/plughost/internal/dirwatch"
)

// Mode is how a plugin earns the right to run.
type Mode string

// The trust modes.
const (
	// ModeOpen runs every plugin file in the directory (sandboxed):
	// plughost's behaviour before trust modes, and the default.
	ModeOpen Mode = "open"
	// ModePinned runs a plugin only while its file's digest is the one
	// approved for its name in the trust file.
	ModePinned Mode = "pinned"
	// ModeSigned runs a plugin only while NAME.sig beside its file is a
	// valid SSH signature of it (namespace plughost-plugin) by a key in
	// allowed_signers. No approval is needed: the operator's trust is in
	// the keys, and a new release signed by a trusted key runs at once.
	ModeSigned Mode = "signed"
)

// State is what a check found, as Status, logs and the audit log show it.
type State string

// The states of a checked plugin. Open, approved and signed plugins run;
// the others are quarantined: not started, not served.
const (
	StateOpen     State = "open"     // mode open: not checked
	StateApproved State = "approved" // pinned, and its digest is the one approved
	StateSigned   State = "signed"   // signed by a trusted key
	StatePending  State = "pending"  // pinned, and no approval for its name
	StateChanged  State = "changed"  // pinned, and approved with another digest
	StateRevoked  State = "revoked"  // pinned, and its approval was withdrawn while this host ran
	StateUnsigned State = "unsigned" // signed mode, and no valid signature by a trusted key
	StateError    State = "error"    // the trust file or allowed_signers cannot be read
	// StateExposed: pinned or signed, and others than the host's user and
	// root may change the plugin file (a file or directory writable by
	// its group or others, or owned by another user, or a symbolic link
	// leading out of the plugin directory): the manager refuses it
	// before it is checked, whatever its digest.
	StateExposed State = "exposed"
)

// Verdict is the outcome of one check.
type Verdict struct {
	// Mode is the plugin's trust mode.
	Mode Mode
	// State is what the check found.
	State State
	// Digest is the plugin file's ("sha256:…"); empty in mode open.
	Digest string
	// Signer is the first principal of the key that signed it (mode
	// signed, valid signature).
	Signer string
	// SignedDigest is the digest ("sha256:…") of the bytes whose signature
	// was verified (mode signed, valid signature): the file read at its
	// path, which a caller that runs a descriptor it hashed itself
	// compares with its own digest (Signers.Verify).
	SignedDigest string
	// Reason says why a quarantined plugin may not run, and what to do:
	// "not approved (plughost approve echo)", "changed since approval:
	// digest sha256:… was sha256:…", "signature: …". Empty when it may.
	Reason string
	// Definitions are the definitions approved with the file, by
	// Definition.Key: in mode pinned, its approval's; in mode signed, those
	// of an approval of this very file in the trust file, when there is
	// one (a signature needs no approval, but its definitions may be
	// approved). Nil when none are pinned. The manager holds back what
	// the plugin lists otherwise.
	Definitions map[string]Pinned
	// ApprovedParts are the parts of the approval a changed plugin is
	// compared with (Entry.Parts), for DiffParts; nil otherwise.
	ApprovedParts map[string]string
}

// DiffParts says which parts differ between an approval's parts and the
// plugin's now, a line each ("program: /usr/bin/srv sha256:… → /usr/bin/srv
// sha256:…"), sorted by part; nil when either is unknown.
func DiffParts(approved, now map[string]string) []string {
	if approved == nil || now == nil {
		return nil
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(now)) {
		if approved[k] != now[k] {
			was := approved[k]
			if was == "" {
				was = "(none)"
			}
			out = append(out, k+": "+was+" → "+now[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(approved)) {
		if _, ok := now[k]; !ok {
			out = append(out, k+": "+approved[k]+" → (none)")
		}
	}
	return out
}

// Allowed reports whether the plugin may run.
func (v Verdict) Allowed() bool {
	return v.State == StateOpen || v.State == StateApproved || v.State == StateSigned
}

// Options configure a Checker. A nil *Options is mode open for every
// plugin.
type Options struct {
	// Mode is the default trust mode; "" is ModeOpen.
	Mode Mode
	// ModeFor, when not nil, gives a plugin's own mode by provider name;
	// "" keeps Mode.
	ModeFor func(name string) Mode
	// File is the trust file (see File). Required when a plugin is
	// pinned; it need not exist yet (nothing is approved). In mode signed
	// it is read for the definitions approved of a signed file (see
	// Verdict.Definitions), when set.
	File string
	// AllowedSigners is the allowed_signers file (see Signers). Required
	// when a plugin is signed.
	AllowedSigners string
	// Logger receives state changes (INFO when a plugin may run, WARN
	// when it is quarantined) and reload failures. Nil discards.
	Logger hclog.Logger
	// OnChange, when not nil, learns of every state change of a plugin,
	// for the audit log. It is called from Check, on the caller's
	// goroutine.
	OnChange func(Change)
	// Now is the clock (allowed_signers' valid-after and valid-before);
	// nil is time.Now.
	Now func() time.Time
}

// Change is a plugin's change of state, for Options.OnChange.
type Change struct {
	Time   time.Time
	Plugin string
	// From is the previous state; "" for the plugin's first check.
	From State
	Verdict
}

// Checker decides which plugins may run, from the trust file and
// allowed_signers, and follows both files (Watch). Its methods are safe
// for concurrent use.
type Checker struct {
	opts Options
	log  hclog.Logger

	mu         sync.Mutex
	file       *File
	fileErr    error
	signers    *Signers
	signersErr error
	snap       [2]string        // contents of the trust file and allowed_signers as last read
	last       map[string]State // by provider name: the state last reported
}

// New returns a Checker that has read its files. A mode other than open,
// pinned or signed, a pinned mode without a trust file and a signed mode
// without allowed_signers are errors; so are a trust file or
// allowed_signers that cannot be read now (later, while watched, such a
// failure quarantines the plugins that need the file instead).
func New(opts *Options) (*Checker, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Mode == "" {
		o.Mode = ModeOpen
	}
	if err := CheckMode(o.Mode); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Checker{opts: o, log: o.Logger, last: map[string]State{}}
	c.reload()
	switch {
	case c.fileErr != nil:
		return nil, c.fileErr
	case c.signersErr != nil:
		return nil, c.signersErr
	}
	return c, nil
}

// CheckMode reports whether m is a mode.
func CheckMode(m Mode) error {
	switch m {
	case ModeOpen, ModePinned, ModeSigned:
		return nil
	}
	return fmt.Errorf("trust mode %q: want %q, %q or %q", m, ModeOpen, ModePinned, ModeSigned)
}

// ModeOf returns the named plugin's mode.
func (c *Checker) ModeOf(name string) Mode {
	if c.opts.ModeFor != nil {
		if m := c.opts.ModeFor(name); m != "" {
			return m
		}
	}
	return c.opts.Mode
}

// Reload reads the trust file and allowed_signers again now, and reports
// whether either changed: a process that has just written the trust file
// (the console's approve) applies it at once, without waiting for Watch
// to hear of it (Watch's own read then finds nothing new).
func (c *Checker) Reload() (changed bool) { return c.reload() }

// reload reads the trust file and allowed_signers again, and reports
// whether either holds something else than when last read (or reads
// otherwise: a file gone, a file back).
func (c *Checker) reload() (changed bool) {
	snap := [2]string{contents(c.opts.File), contents(c.opts.AllowedSigners)}
	c.mu.Lock()
	same := c.snap == snap
	c.mu.Unlock()
	if same {
		return false
	}
	var f *File
	var ferr error
	if c.opts.File != "" {
		f, ferr = ReadFile(c.opts.File)
	}
	var s *Signers
	var serr error
	if c.opts.AllowedSigners != "" {
		s, serr = ReadSigners(c.opts.AllowedSigners)
	}
	c.mu.Lock()
	c.file, c.fileErr, c.signers, c.signersErr, c.snap = f, ferr, s, serr, snap
	c.mu.Unlock()
	for _, err := range []error{ferr, serr} {
		if err != nil {
			c.log.Error("cannot read a trust file: the plugins that need it are quarantined until it is fixed", "error", err)
		}
	}
	return true
}

// contents is what reload compares of a file: its bytes (at most
// MaxFileSize and one), or why they cannot be read; "" for no file.
func contents(path string) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return "error: " + err.Error()
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return "error: " + err.Error()
	}
	return "file: " + string(b)
}

// Check decides whether the plugin of that provider name, whose file is at
// path, may run. digest is the file's ("sha256:…") when the caller has it,
// "" to have Check compute it. A change of the plugin's state since its
// last check is logged and passed to Options.OnChange.
func (c *Checker) Check(name, path, digest string) Verdict {
	v := c.evaluate(name, path, digest)
	c.mu.Lock()
	from, seen := c.last[name]
	if v.State == StatePending && from == StateApproved {
		v.State, v.Reason = StateRevoked, "approval revoked; quarantined until approved again (plughost approve "+name+")"
	}
	if v.State == StatePending && from == StateRevoked {
		v.State = StateRevoked // still the revoked plugin
		v.Reason = "approval revoked; quarantined until approved again (plughost approve " + name + ")"
	}
	c.last[name] = v.State
	c.mu.Unlock()
	if seen && from == v.State {
		return v
	}
	log := c.log.With("plugin", name, "mode", v.Mode, "state", v.State)
	if v.Digest != "" {
		log = log.With("digest", v.Digest)
	}
	switch {
	case v.State == StateOpen:
		// Not worth a line per plugin: the host warns of open mode once.
	case v.Allowed():
		log.Info("plugin trusted", "signer", v.Signer)
	default:
		log.Warn("plugin quarantined: not started, not served", "reason", v.Reason)
	}
	if c.opts.OnChange != nil && (seen || v.State != StateOpen) {
		c.opts.OnChange(Change{Time: c.opts.Now().UTC(), Plugin: name, From: from, Verdict: v})
	}
	return v
}

// Forget drops what the Checker remembers of a plugin whose file is gone,
// so that a plugin of that name added later starts afresh.
func (c *Checker) Forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.last, name)
}

// evaluate is Check without its memory.
func (c *Checker) evaluate(name, path, digest string) Verdict {
	v := Verdict{Mode: c.ModeOf(name)}
	if v.Mode == ModeOpen {
		v.State = StateOpen
		return v
	}
	if digest == "" {
		d, err := Digest(path)
		if err != nil {
			v.State, v.Reason = StateError, "cannot read the plugin file: "+err.Error()
			return v
		}
		digest = d
	}
	v.Digest = digest
	c.mu.Lock()
	f, ferr, s, serr := c.file, c.fileErr, c.signers, c.signersErr
	c.mu.Unlock()
	switch v.Mode {
	case ModePinned:
		switch e, ok := f.lookup(name); {
		case c.opts.File == "":
			v.State, v.Reason = StateError, "pinned, but no trust file is configured"
		case ferr != nil:
			v.State, v.Reason = StateError, ferr.Error()
		case !ok:
			v.State, v.Reason = StatePending, "not approved (plughost approve "+name+")"
		case e.Digest != digest:
			v.ApprovedParts = e.Parts
			v.State, v.Reason = StateChanged, fmt.Sprintf("changed since approval: digest %s was %s (approved %s); plughost approve %s",
				digest, e.Digest, e.ApprovedAt.UTC().Format(time.RFC3339), name)
		default:
			v.State, v.Definitions = StateApproved, e.Definitions
		}
	case ModeSigned:
		switch {
		case c.opts.AllowedSigners == "":
			v.State, v.Reason = StateError, "signed, but no allowed_signers file is configured"
		case serr != nil:
			v.State, v.Reason = StateError, serr.Error()
		default:
			signer, signed, err := s.Verify(path, path+SigSuffix, c.opts.Now())
			if err != nil {
				v.State, v.Reason = StateUnsigned, "signature: "+err.Error()
				break
			}
			v.State, v.Signer, v.SignedDigest = StateSigned, signer, signed
			if e, ok := f.lookup(name); ok && ferr == nil && e.Digest == digest {
				v.Definitions = e.Definitions // its definitions approved: see Verdict
			}
		}
	}
	return v
}

// lookup returns the approval of name; a nil *File has none.
func (f *File) lookup(name string) (Entry, bool) {
	if f == nil {
		return Entry{}, false
	}
	e, ok := f.Plugins[name]
	return e, ok
}

// debounce is how long the trust files must be quiet after an event
// before they are read again: a configuration manager may write twice.
const debounce = 20 * time.Millisecond

// Watch follows the trust file and allowed_signers until ctx ends: when
// either holds something new (written, renamed over, created, removed),
// it reads both again and calls changed, for the caller to check its
// plugins again. It watches the files' directories (making a missing
// one, 0700) and reads the files again after any event there, so that a
// file renamed over (as Update and most configuration managers write) is
// seen, and so is a Kubernetes ConfigMap or Secret volume, whose files
// are symbolic links through a "..data" link swapped at each update. The
// watch is in place when Watch returns; it runs in the background, and
// done is closed once it has stopped after ctx ended. The error says that
// a directory cannot be watched.
func (c *Checker) Watch(ctx context.Context, changed func()) (done <-chan struct{}, err error) {
	var dirs []string
	for _, p := range []string{c.opts.File, c.opts.AllowedSigners} {
		if p == "" {
			continue
		}
		// The trust file's directory may not exist before the first
		// approval: it is made now so that the approval is seen.
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("trust: watch %s: %w", filepath.Dir(p), err)
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	w, err := dirwatch.Start(dirs, debounce,
		func(err error) { c.log.Warn("watching the trust files", "error", err) },
		func() {
			if c.reload() {
				c.log.Info("the trust files changed; checking the plugins again")
				changed()
			}
		})
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		<-ctx.Done()
		_ = w.Close()
	}()
	return ended, nil
}
