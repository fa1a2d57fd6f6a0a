package manager

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/pluginproto"
)

// Trust and requested permissions: which plugin files may run
// (Options.Trust), and what each asks to be granted next to what its
// policy grants (Options.Denied). See the package documentation.

// Trust decides which plugin files may run. *trust.Checker is one.
type Trust interface {
	// Check decides whether the plugin file at path, of that provider
	// name and digest ("sha256:…"), may run.
	Check(name, path, digest string) trust.Verdict
	// ModeOf returns the named plugin's trust mode: in mode pinned and
	// signed a plugin file that others may change is refused before it
	// is checked (trust.StateExposed).
	ModeOf(name string) trust.Mode
	// Forget drops what Check remembers of a plugin whose file is gone.
	Forget(name string)
	// Watch calls changed whenever the decisions may have changed (an
	// approval, a revocation, a new allowed_signers), until ctx ends. It
	// is watching when it returns; done is closed once it has stopped.
	Watch(ctx context.Context, changed func()) (done <-chan struct{}, err error)
}

// checkTrust opens the plugin file, checks it as it is now, records the
// verdict in the status, and returns it with the file opened (nil when
// it cannot be opened), which the caller closes: the file that is
// launched is the one checked (see pluginFile). Without Options.Trust
// every plugin may run. Only run's goroutine calls it once the
// supervisor runs (it updates s.bin).
//
// A file that others than the host's user and root may change, or a
// symbolic link (pluginFile.refusals), is refused in mode pinned and
// signed, with state exposed, before the trust file is asked: it is
// never logged as approved. In mode open it runs, and each new exposure
// is logged at WARN.
func (s *supervisor) checkTrust() (trust.Verdict, *pluginFile) {
	pf, err := openPluginFile(s.m.opts.Dir, s.path)
	if err != nil {
		s.log.Debug("cannot open the plugin file", "error", err)
	}
	var t Trust // nil: every plugin may run
	if s.m.opts.checking() {
		t = s.m.opts.Trust
	}
	var mode trust.Mode = trust.ModeOpen
	if t != nil {
		mode = t.ModeOf(s.name)
	}
	holds := mode != trust.ModeOpen && mode != ""
	var exposures []string
	switch {
	case pf != nil && holds:
		exposures = pf.refusals(s.m.opts.Dir)
	case pf != nil:
		exposures = pf.warnings(s.m.opts.Dir)
	}
	refuse := holds && len(exposures) > 0
	s.warnExposures(exposures, refuse)
	if t == nil {
		return trust.Verdict{Mode: trust.ModeOpen, State: trust.StateOpen}, pf
	}
	var digest string
	if pf != nil {
		if id, ok := pf.identify(&s.bin); ok {
			s.bin = id // the catalog cache's identity too: hashed once
			digest = trust.SHA256Digest(id.SHA256)
		}
	}
	var v trust.Verdict
	switch {
	case refuse:
		v = trust.Verdict{Mode: mode, State: trust.StateExposed, Digest: digest,
			Reason: "refused before its approval is looked at: " + strings.Join(exposures, "; ")}
	case holds && pf == nil:
		// Check would read the path again: what it found is not what
		// would run.
		v = trust.Verdict{Mode: mode, State: trust.StateError, Reason: "cannot open the plugin file: " + errText(err)}
	case holds && digest == "":
		v = trust.Verdict{Mode: mode, State: trust.StateError, Reason: "the plugin file was written while it was hashed; checked again at its next change"}
	default:
		v = t.Check(s.name, s.path, digest)
		if v.State == trust.StateSigned && v.SignedDigest != digest {
			// The signature was verified over the file read at its path,
			// and these are not the bytes hashed from the descriptor that
			// would run: swapped between the two reads.
			s.log.Warn("plugin file changed while its signature was checked: not started", "signed", v.SignedDigest, "opened", digest)
			v = trust.Verdict{Mode: mode, State: trust.StateError, Digest: digest,
				Reason: "the plugin file changed while its signature was checked (signed " + v.SignedDigest + ", opened " + digest + "); checked again at its next change"}
		}
	}
	s.update(func(st *PluginStatus) { st.Trust = v })
	return v, pf
}

// errText is err's text, or "unknown error".
func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// warnExposures logs the plugin file's exposures when they differ from
// those last logged: refused (mode pinned or signed) or only warned of.
func (s *supervisor) warnExposures(exposures []string, refused bool) {
	text := strings.Join(exposures, "; ")
	s.mu.Lock()
	same := s.warnedExposures == text
	s.warnedExposures = text
	s.mu.Unlock()
	switch {
	case same || text == "":
	case refused:
		s.log.Warn("plugin file refused: others than the host's user and root may change it, or it is a symbolic link; "+
			"quarantined until that is fixed", "exposures", text)
	default:
		s.log.Warn("plugin file may be changed by others than the host's user and root; "+
			"it runs (trust mode open), and would be refused in mode pinned or signed", "exposures", text)
	}
}

// quarantine withdraws the plugin (a running process is stopped) and
// records why it may not run; it waits in stageQuarantined for its file
// or its trust to change.
func (l *life) quarantine(v trust.Verdict) stage {
	s := l.s
	l.unpublish("is quarantined: " + v.Reason)
	if l.cur != nil {
		l.cur.stop(s.m.opts.StopTimeout, true)
		l.cur = nil
	}
	req := s.requestsOf(v.Digest, pluginclient.Description{}, false)
	s.mu.Lock()
	s.listed = nil // not running: nothing to approve
	s.mu.Unlock()
	var already bool
	s.update(func(st *PluginStatus) {
		already = st.State == StateQuarantined
		st.State, st.Trust, st.PID, st.Sandbox, st.Version, st.Contract = StateQuarantined, v, 0, nil, "", 0 // the version was a process's
		st.setError(nil, "")
		st.count(lists{})
		st.Held = nil
		st.Requests, st.Denied = req, s.m.opts.denied(s.name, req)
	})
	if !already { // checked again and still refused: no new event
		s.event(EventQuarantined)
	}
	l.settled()
	s.settleChanges()
	return stageQuarantined
}

// quarantined waits for the file of a quarantined plugin, or the trust
// files, to change: then it is checked again.
func (l *life) quarantined() stage {
	s := l.s
	select {
	case <-l.ctx.Done():
		return stageStopping
	case <-s.changed:
		l.deaths = nil
		return stageLoading
	case <-s.recheck:
		v, pf := s.checkTrust()
		pf.close()
		if !v.Allowed() {
			return l.quarantine(v) // the reason may have changed
		}
		l.deaths = nil
		return stageLoading
	}
}

// rechecked checks a plugin that may run (or is down for another reason)
// again after its trust changed: it is quarantined when it may no longer
// run, else it stays in stage st.
func (l *life) rechecked(st stage) stage {
	v, pf := l.s.checkTrust()
	pf.close()
	if !v.Allowed() {
		return l.quarantine(v)
	}
	if l.last != nil { // the approved definitions may have changed
		l.show(l.last.desc, l.listed, false)
	}
	return st
}

// recheckAll makes every supervisor check its plugin's trust again.
func (m *Manager) recheckAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.plugins {
		s.trustChanged()
	}
}

// recheckSigned makes the supervisor of the plugin file of that name
// check its trust again: its signature file changed.
func (m *Manager) recheckSigned(file string) {
	path := filepath.Join(m.opts.Dir, file)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.plugins {
		if s.path == path {
			s.trustChanged()
		}
	}
}

// trustChanged makes run check the plugin's trust again (coalesced).
func (s *supervisor) trustChanged() {
	select {
	case s.recheck <- struct{}{}:
	default:
	}
}

// requestsOf is what the plugin asks to be granted: a declared server's
// requests member, or what the plugin's Describe said (d, when known), or
// for a binary that is not running what it said when it last ran this
// very binary (its catalog cache entry, when the digest matches); empty
// when unknown.
func (s *supervisor) requestsOf(digest string, d pluginclient.Description, described bool) pluginproto.Requests {
	if _, ok := declared.Name(filepath.Base(s.path)); ok {
		if decl, err := declared.Load(s.path); err == nil {
			return decl.Requests
		}
		return pluginproto.Requests{}
	}
	if described {
		return d.Requests
	}
	sha, _ := trust.ParseDigest(digest) // "" when unknown
	return s.m.cache.requestsOf(s.name, sha)
}

// requestsOf returns the requests of the named plugin's cache entry when
// it was made from the binary of that SHA-256; empty otherwise.
func (c *catalogCache) requestsOf(name, sha string) pluginproto.Requests {
	if c == nil || sha == "" {
		return pluginproto.Requests{}
	}
	b, err := os.ReadFile(c.path(name))
	var e cacheEntry
	if err != nil || json.Unmarshal(b, &e) != nil || e.Format != cacheFormat || e.Name != name || e.Binary.SHA256 != sha {
		return pluginproto.Requests{}
	}
	return e.Requests
}

// denied is what the named plugin asks for beyond its grant
// (Options.Denied); empty without one.
func (o *Options) denied(name string, r pluginproto.Requests) pluginproto.Requests {
	if o.Denied == nil || r.Empty() {
		return pluginproto.Requests{}
	}
	return o.Denied(name, r)
}

// showRequests records what the plugin asks for and what of it is not
// granted, logging the difference at WARN once for each new request.
func (s *supervisor) showRequests(r pluginproto.Requests) {
	denied := s.m.opts.denied(s.name, r)
	s.mu.Lock()
	logged := s.warnedDenied != nil && s.warnedDenied.Equal(denied)
	s.st.Requests, s.st.Denied = r, denied
	if !denied.Empty() {
		s.warnedDenied = &denied
	}
	s.mu.Unlock()
	if !denied.Empty() && !logged {
		s.log.Warn("plugin asks for more than its sandbox policy grants; it runs with the grant only",
			"requested", r.String(), "not_granted", denied.String())
	}
}
