package trust_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/sandbox"
)

// approve writes path's digest as name's approval, as plughost approve does.
func approve(t *testing.T, trustFile, name, path string) {
	t.Helper()
	d, err := trust.Digest(path)
	if err != nil {
		t.Fatal(err)
	}
	err = trust.Update(trustFile, func(f *trust.File) error {
		f.Plugins[name] = trust.Entry{Digest: d, ApprovedAt: time.Now().UTC(), ApprovedBy: "test"}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCheckModes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, pub := keygen(t, dir, "author")
	signersFile := writeFile(t, dir, "allowed_signers", "author@example.com "+pub+"\n")

	tests := map[string]struct {
		mode    trust.Mode            // the default
		modeFor map[string]trust.Mode // per plugin
		prepare func(t *testing.T, trustFile, plugin string)
		want    trust.State
		reason  string // in Reason
	}{
		"open by default": {want: trust.StateOpen},
		"pinned, not approved": {mode: trust.ModePinned, prepare: func(*testing.T, string, string) {},
			want: trust.StatePending, reason: "not approved (plughost approve echo)"},
		"pinned, approved": {mode: trust.ModePinned, prepare: func(t *testing.T, tf, p string) { approve(t, tf, "echo", p) },
			want: trust.StateApproved},
		"pinned, changed since approval": {mode: trust.ModePinned, prepare: func(t *testing.T, tf, p string) {
			approve(t, tf, "echo", p)
			writeFile(t, filepath.Dir(p), "echo", "#!/bin/sh\necho changed\n")
		}, want: trust.StateChanged, reason: "changed since approval: digest sha256:"},
		"pinned, another plugin approved": {mode: trust.ModePinned, prepare: func(t *testing.T, tf, p string) { approve(t, tf, "other", p) },
			want: trust.StatePending},
		"signed, good": {mode: trust.ModeSigned, prepare: func(t *testing.T, _, p string) { sign(t, key, trust.Namespace, p) },
			want: trust.StateSigned},
		"signed, no approval needed, but a signature is": {mode: trust.ModeSigned, prepare: func(t *testing.T, tf, p string) { approve(t, tf, "echo", p) },
			want: trust.StateUnsigned, reason: "signature: no signature"},
		"plugin block overrides the default: open": {mode: trust.ModePinned, modeFor: map[string]trust.Mode{"echo": trust.ModeOpen},
			want: trust.StateOpen},
		"plugin block overrides the default: pinned": {mode: trust.ModeOpen, modeFor: map[string]trust.Mode{"echo": trust.ModePinned},
			prepare: func(*testing.T, string, string) {}, want: trust.StatePending},
		"another plugin's block does not apply": {mode: trust.ModeSigned, modeFor: map[string]trust.Mode{"other": trust.ModeOpen},
			prepare: func(*testing.T, string, string) {}, want: trust.StateUnsigned},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := t.TempDir()
			plugin := writeFile(t, d, "echo", "#!/bin/sh\necho hello\n")
			trustFile := filepath.Join(d, "state", "trust.json")
			if tc.prepare != nil {
				tc.prepare(t, trustFile, plugin)
			}
			c, err := trust.New(&trust.Options{Mode: tc.mode, File: trustFile, AllowedSigners: signersFile,
				ModeFor: func(n string) trust.Mode { return tc.modeFor[n] }})
			if err != nil {
				t.Fatal(err)
			}
			v := c.Check("echo", plugin, "")
			if v.State != tc.want || !strings.Contains(v.Reason, tc.reason) {
				t.Fatalf("Check = %+v, want state %s and a reason with %q", v, tc.want, tc.reason)
			}
			if v.Allowed() != (tc.want == trust.StateOpen || tc.want == trust.StateApproved || tc.want == trust.StateSigned) {
				t.Fatalf("Allowed() = %v for %s", v.Allowed(), v.State)
			}
			if v.State == trust.StateSigned && v.Signer != "author@example.com" {
				t.Fatalf("Signer = %q", v.Signer)
			}
		})
	}
}

// TestCheckerFollowsTheTrustFile: approving and revoking while the
// Checker watches changes its verdicts, and every change of state is
// reported once (for the audit log).
func TestCheckerFollowsTheTrustFile(t *testing.T) {
	t.Parallel()
	d := t.TempDir()
	plugin := writeFile(t, d, "echo", "#!/bin/sh\necho hello\n")
	trustFile := filepath.Join(d, "state", "trust.json") // its directory does not exist yet
	var mu sync.Mutex
	var changes []string
	c, err := trust.New(&trust.Options{Mode: trust.ModePinned, File: trustFile, OnChange: func(ch trust.Change) {
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, string(ch.From)+"→"+string(ch.State))
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	reread := make(chan struct{}, 16)
	done, err := c.Watch(ctx, func() { reread <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		<-done
	}()
	// until checks the plugin whenever Watch reports, until it is in
	// state want.
	until := func(want trust.State) trust.Verdict {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			if v := c.Check("echo", plugin, ""); v.State == want {
				return v
			}
			select {
			case <-reread:
			case <-deadline:
				t.Fatalf("the plugin did not become %s", want)
			}
		}
	}

	until(trust.StatePending)
	c.Check("echo", plugin, "") // the same state: not reported again
	approve(t, trustFile, "echo", plugin)
	until(trust.StateApproved)
	if err := trust.Update(trustFile, func(f *trust.File) error { delete(f.Plugins, "echo"); return nil }); err != nil {
		t.Fatal(err)
	}
	until(trust.StateRevoked)
	if err := os.WriteFile(trustFile, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v := until(trust.StateError); !strings.Contains(v.Reason, "not a trust file") {
		t.Fatalf("with a broken trust file: %+v", v)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"→pending", "pending→approved", "approved→revoked", "revoked→error"}, changes); diff != "" {
		t.Fatalf("changes (-want +got):\n%s", diff)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	d := t.TempDir()
	bad := writeFile(t, d, "trust.json", `{"format":9}`)
	tests := map[string]struct {
		opts trust.Options
		want string
	}{
		"unknown mode":            {opts: trust.Options{Mode: "strict"}, want: `trust mode "strict"`},
		"unreadable trust file":   {opts: trust.Options{Mode: trust.ModePinned, File: bad}, want: "format 9"},
		"missing allowed_signers": {opts: trust.Options{Mode: trust.ModeSigned, AllowedSigners: filepath.Join(d, "none")}, want: "allowed signers"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := trust.New(&tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestDenied(t *testing.T) {
	t.Parallel()
	asks := pluginproto.Requests{
		Read:  []string{"/srv/notes", "/usr/lib/x86_64-linux-gnu", "/etc/shadow"},
		Write: []string{"/srv/notes/inbox", "/var/db"},
		Net:   []string{"api.example.com:443", "evil.example.com:443"},
		Env:   []string{"LANG", "AWS_SECRET_ACCESS_KEY"},
	}
	tests := map[string]struct {
		policy sandbox.Policy
		want   pluginproto.Requests
	}{
		"the default policy grants only the system paths": {want: pluginproto.Requests{
			Read: []string{"/srv/notes", "/etc/shadow"}, Write: []string{"/srv/notes/inbox", "/var/db"},
			Net: []string{"api.example.com:443", "evil.example.com:443"}, Env: []string{"LANG", "AWS_SECRET_ACCESS_KEY"}}},
		"a policy that grants part": {policy: sandbox.Policy{
			Dirs: []sandbox.Dir{{Name: "notes", Path: "/srv/notes", Write: true}}, Net: sandbox.NetList,
			NetAllow: []string{"API.example.com:443"}, Env: []string{"LANG"}}, want: pluginproto.Requests{
			Read: []string{"/etc/shadow"}, Write: []string{"/var/db"}, Net: []string{"evil.example.com:443"}, Env: []string{"AWS_SECRET_ACCESS_KEY"}}},
		"read-only is not write": {policy: sandbox.Policy{AllowRead: []string{"/srv", "/var/db", "/etc"}, Net: sandbox.NetAll,
			Env: []string{"LANG", "AWS_SECRET_ACCESS_KEY"}}, want: pluginproto.Requests{Write: []string{"/srv/notes/inbox", "/var/db"}}},
		"a disabled sandbox grants everything": {policy: sandbox.Policy{Disabled: true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, trust.Denied(asks, &tc.policy)); diff != "" {
				t.Fatalf("Denied (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckerFollowsAConfigMapVolume: a Kubernetes ConfigMap volume's
// files are symbolic links through "..data", a link to a timestamped
// directory that an update swaps (renaming a new link over it): no event
// names the trust file, and the Checker sees the update all the same.
func TestCheckerFollowsAConfigMapVolume(t *testing.T) {
	t.Parallel()
	d := t.TempDir()
	plugin := writeFile(t, d, "echo", "#!/bin/sh\necho hello\n")
	digest, err := trust.Digest(plugin)
	if err != nil {
		t.Fatal(err)
	}
	vol := filepath.Join(d, "config")
	version := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(vol, name), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(vol, name), "trust.json", content)
		if err := os.Symlink(name, filepath.Join(vol, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(vol, "..data_tmp"), filepath.Join(vol, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2026_11_26_1", `{"format":1}`)
	if err := os.Symlink("..data/trust.json", filepath.Join(vol, "trust.json")); err != nil {
		t.Fatal(err)
	}
	c, err := trust.New(&trust.Options{Mode: trust.ModePinned, File: filepath.Join(vol, "trust.json")})
	if err != nil {
		t.Fatal(err)
	}
	reread := make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(t.Context())
	done, err := c.Watch(ctx, func() { reread <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		<-done
	}()
	if v := c.Check("echo", plugin, ""); v.State != trust.StatePending {
		t.Fatalf("before: %+v", v)
	}
	version("..2026_11_26_2", `{"format":1,"plugins":{"echo":{"digest":"`+digest+`"}}}`)
	select {
	case <-reread:
	case <-time.After(10 * time.Second):
		t.Fatal("the ConfigMap's update was not seen")
	}
	if v := c.Check("echo", plugin, ""); v.State != trust.StateApproved {
		t.Fatalf("after the update: %+v", v)
	}
}
