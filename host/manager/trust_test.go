package manager

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/sandbox"
)

// eventLog is an Options.OnEvent that reports each event of one plugin
// but EventLoaded, which follows every successful start and which no
// test of trust awaits (left out, it cannot fill the buffer).
type eventLog chan Event

func (e eventLog) onEvent(plugin string, ev Event) {
	if plugin == "tp" && ev != EventLoaded {
		e <- ev
	}
}

// await waits for the plugin's event want, skipping others.
func (e eventLog) await(t *testing.T, want Event) {
	t.Helper()
	deadline := time.After(waitLong)
	for {
		select {
		case ev := <-e:
			if ev == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %s event", want)
		}
	}
}

// approveFile writes the digest of path as tp's approval, as plughost
// approve does.
func approveFile(t *testing.T, trustFile, path string) string {
	t.Helper()
	d, err := trust.Digest(path)
	if err != nil {
		t.Fatal(err)
	}
	err = trust.Update(trustFile, func(f *trust.File) error {
		f.Plugins["tp"] = trust.Entry{Digest: d, ApprovedAt: time.Now().UTC(), ApprovedBy: "test"}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func revokeFile(t *testing.T, trustFile string) {
	t.Helper()
	if err := trust.Update(trustFile, func(f *trust.File) error { delete(f.Plugins, "tp"); return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestPinnedPluginIsQuarantinedUntilApproved follows a pinned plugin: an
// unapproved binary is quarantined (not started, not published), is
// served once approved without a restart, is quarantined again when its
// binary changes and after its approval is revoked; every change of state
// reaches the trust's OnChange (the audit log's feed).
func TestPinnedPluginIsQuarantinedUntilApproved(t *testing.T) {
	t.Parallel()
	dir, state := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	trustFile := filepath.Join(state, "trust.json")
	changes := make(chan trust.Change, 32)
	checker, err := trust.New(&trust.Options{Mode: trust.ModePinned, File: trustFile, OnChange: func(c trust.Change) { changes <- c }})
	if err != nil {
		t.Fatal(err)
	}
	events := make(eventLog, 64)
	h := start(t, dir, Options{Trust: checker, OnEvent: events.onEvent})
	h.ready()
	events.await(t, EventQuarantined)
	st := h.status("tp")
	digest, _ := trust.Digest(path)
	if st.State != StateQuarantined || st.Trust.State != trust.StatePending || st.Trust.Digest != digest ||
		!strings.Contains(st.Trust.Reason, "not approved (plughost approve tp)") || st.PID != 0 {
		t.Fatalf("unapproved plugin: %+v", st)
	}
	h.noEvent() // never published

	approveFile(t, trustFile, path)
	e := h.expect("set", "tp")
	if !strings.Contains(strings.Join(e.tools, ","), "variant_v1") {
		t.Fatalf("published tools %v", e.tools)
	}
	mustPID(t, e.p)
	if st := h.status("tp"); st.State != StateRunning || st.Trust.State != trust.StateApproved {
		t.Fatalf("approved plugin: %+v", st)
	}

	replaceFile(t, pluginV2, path) // changed on disk: quarantined again, and the old process stopped
	h.expect("remove", "tp")
	events.await(t, EventQuarantined)
	st = h.status("tp")
	newDigest, _ := trust.Digest(path)
	if st.State != StateQuarantined || st.Trust.State != trust.StateChanged || st.Trust.Digest != newDigest ||
		!strings.Contains(st.Trust.Reason, "changed since approval: digest "+newDigest+" was "+digest) {
		t.Fatalf("changed plugin: %+v", st)
	}

	approveFile(t, trustFile, path)
	e = h.expect("set", "tp")
	if !strings.Contains(strings.Join(e.tools, ","), "variant_v2") {
		t.Fatalf("published tools %v", e.tools)
	}

	revokeFile(t, trustFile)
	h.expect("remove", "tp")
	events.await(t, EventQuarantined)
	if st := h.status("tp"); st.State != StateQuarantined || st.Trust.State != trust.StateRevoked {
		t.Fatalf("revoked plugin: %+v", st)
	}
	if _, err := call(t, e.p, "pid", ""); err == nil || !strings.Contains(err.Error(), "quarantined") {
		t.Fatalf("a call through the revoked plugin's provider: %v", err)
	}

	var got []string
	for len(changes) > 0 {
		c := <-changes
		got = append(got, string(c.From)+"→"+string(c.State))
	}
	want := []string{"→pending", "pending→approved", "approved→changed", "changed→approved", "approved→revoked"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("trust changes (-want +got):\n%s", diff)
	}
}

// TestSignedPluginRunsOnceSigned: a plugin in mode signed is quarantined
// without its signature, runs once the author's ssh-keygen signature
// appears beside it (no approval), and is quarantined again when the
// binary no longer matches its signature.
func TestSignedPluginRunsOnceSigned(t *testing.T) {
	t.Parallel()
	dir, keys := t.TempDir(), t.TempDir()
	key, signers := newSigner(t, keys)
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	checker, err := trust.New(&trust.Options{Mode: trust.ModeSigned, AllowedSigners: signers})
	if err != nil {
		t.Fatal(err)
	}
	events := make(eventLog, 64)
	h := start(t, dir, Options{Trust: checker, OnEvent: events.onEvent})
	h.ready()
	events.await(t, EventQuarantined)
	if st := h.status("tp"); st.State != StateQuarantined || !strings.Contains(st.Trust.Reason, "signature: no signature") {
		t.Fatalf("unsigned plugin: %+v", st)
	}

	// Signed elsewhere and moved in, as a release would be deployed.
	staged := filepath.Join(keys, "tp")
	copyFile(t, pluginV1, staged, 0o755)
	sshKeygen(t, "-Y", "sign", "-f", key, "-n", trust.Namespace, staged)
	if err := os.Rename(staged+".sig", path+".sig"); err != nil {
		t.Fatal(err)
	}
	h.expect("set", "tp")
	if st := h.status("tp"); st.State != StateRunning || st.Trust.State != trust.StateSigned || st.Trust.Signer != "author@example.com" {
		t.Fatalf("signed plugin: %+v", st)
	}

	replaceFile(t, pluginV2, path) // the old signature does not match it
	h.expect("remove", "tp")
	events.await(t, EventQuarantined)
	if st := h.status("tp"); st.State != StateQuarantined || !strings.Contains(st.Trust.Reason, "signature: bad signature") {
		t.Fatalf("changed signed plugin: %+v", st)
	}
}

// TestQuarantinedLazyPluginIsNotPublishedFromTheCache: a lazy plugin's
// cache entry is published before it starts, so the trust check comes
// first; what the quarantined binary asks for comes from its entry of
// that very binary, next to what is not granted.
func TestQuarantinedLazyPluginIsNotPublishedFromTheCache(t *testing.T) {
	t.Parallel()
	dir, cacheDir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	h := start(t, dir, Options{CacheDir: cacheDir})
	h.ready()
	h.expect("set", "tp") // ran once, in mode open: its entry is written
	h.stop()

	checker, err := trust.New(&trust.Options{Mode: trust.ModePinned, File: filepath.Join(t.TempDir(), "trust.json")})
	if err != nil {
		t.Fatal(err)
	}
	grant := func(_ string, r pluginproto.Requests) pluginproto.Requests {
		return trust.Denied(r, &sandbox.Policy{Env: []string{"TESTPLUGIN_TOKEN"}})
	}
	events := make(eventLog, 64)
	h = start(t, dir, Options{CacheDir: cacheDir, Start: StartLazy, Trust: checker, Denied: grant, OnEvent: events.onEvent})
	h.ready()
	events.await(t, EventQuarantined)
	h.noEvent()
	st := h.status("tp")
	wantAsked := pluginproto.Requests{Read: []string{"/srv/testplugin"}, Net: []string{"api.example.com:443"}, Env: []string{"TESTPLUGIN_TOKEN"}}
	wantDenied := pluginproto.Requests{Read: []string{"/srv/testplugin"}, Net: []string{"api.example.com:443"}}
	if st.State != StateQuarantined || st.Tools != 0 {
		t.Fatalf("quarantined lazy plugin: %+v", st)
	}
	if diff := cmp.Diff(wantAsked, st.Requests); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantDenied, st.Denied); diff != "" {
		t.Errorf("not granted (-want +got):\n%s", diff)
	}
}

// TestRequestsBeyondTheGrantAreLoggedAndShown: a plugin that asks for
// more than its policy grants runs (with its grant only: Denied is only
// ever shown); the difference is logged at WARN once, not again when the
// plugin restarts, and shown in its status.
func TestRequestsBeyondTheGrantAreLoggedAndShown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	grant := func(_ string, r pluginproto.Requests) pluginproto.Requests {
		return trust.Denied(r, &sandbox.Policy{Net: sandbox.NetList, NetAllow: []string{"api.example.com:443"}})
	}
	h := start(t, dir, Options{Denied: grant})
	h.ready()
	e := h.expect("set", "tp")
	line := h.logs.await(t, "test", "plugin asks for more than its sandbox policy grants")
	if line["@level"] != "warn" || line["not_granted"] != "read /srv/testplugin; env TESTPLUGIN_TOKEN" {
		t.Fatalf("log line %v", line)
	}
	st := h.status("tp")
	if diff := cmp.Diff(pluginproto.Requests{Read: []string{"/srv/testplugin"}, Env: []string{"TESTPLUGIN_TOKEN"}}, st.Denied); diff != "" {
		t.Fatalf("not granted (-want +got):\n%s", diff)
	}
	// A restart asks the same: nothing more is logged.
	_, _ = call(t, e.p, "crash", "")
	h.expect("set", "tp") // restarted: it stayed published meanwhile
	if n := h.logs.count("test", "plugin asks for more than its sandbox policy grants"); n != 1 {
		t.Fatalf("logged %d times, want once", n)
	}
}

func sshKeygen(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Fatal("this test needs OpenSSH's ssh-keygen (apt-get install openssh-client):", err)
	}
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newSigner makes an ed25519 key "author" in dir and an allowed_signers
// file trusting it as author@example.com; it returns both paths.
func newSigner(t *testing.T, dir string) (key, signers string) {
	t.Helper()
	key = filepath.Join(dir, "author")
	sshKeygen(t, "-q", "-t", "ed25519", "-N", "", "-C", "author", "-f", key)
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	signers = filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(signers, []byte("author@example.com "+string(pub)), 0o600); err != nil {
		t.Fatal(err)
	}
	return key, signers
}
